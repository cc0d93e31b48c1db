"""kafka-python's and aiokafka's module layout over kafkacore: switch by changing imports.

The rule (``docs/compat.md`` has the table of what differs, and why):

* ``kafka`` becomes ``kafkacore.compat.kafka``: ``from kafka import
  KafkaConsumer`` -> ``from kafkacore.compat.kafka import KafkaConsumer``,
  ``from kafka.errors import ...`` -> ``from kafkacore.compat.kafka.errors
  import ...``, and so on for ``admin``, ``structs`` and ``serializer``;
* ``aiokafka`` becomes ``kafkacore.compat.aiokafka`` (``errors``,
  ``structs``, ``abc``, ``helpers``, ``admin``, ``consumer``, ``producer``).

Each name there is kafkacore's own class where kafkacore already behaves as
the peer does, and a thin subclass where the peer's surface answers in other
shapes (kafka-python's admin dicts, for instance); kafkacore's own names
(``kafkacore.KafkaConsumer``, ``kafkacore.transports.asyncio``) keep
kafkacore's typed surface. The peers' error names are in
:mod:`kafkacore.compat.errors`, one module for both.

Not part of the sans-IO core: this package imports the transports (it is
installed under the kafkacore name, as ``kafkacore.transports`` is).
"""
