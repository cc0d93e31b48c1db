"""``python -m kafkacore.transports.cli``: the ``kafkacore`` command line."""

from kafkacore.transports.cli import main

if __name__ == "__main__":
    main()
