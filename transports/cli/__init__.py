"""The ``kafkacore`` command line (docs/cli.md): produce, consume, topics, groups,
configs, acls, cluster and perf, over the public blocking clients.

Installed as the ``kafkacore`` script; also ``python -m kafkacore.transports.cli``.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Sequence

import click

from . import _acls, _cluster, _configs, _consume, _groups, _perf, _produce, _topics
from ._app import CliError, Exit, ReaderGone, classify, cli, describe

__all__ = ["Exit", "cli", "main"]

for _module in (_produce, _consume, _topics, _groups, _configs, _acls, _cluster, _perf):
    _module.register(cli)


def main(argv: Sequence[str] | None = None) -> None:
    """Run the command line and exit with its status (see :class:`Exit`)."""
    sys.exit(run(argv))


def run(argv: Sequence[str] | None = None) -> int:
    """Run the command line; return the exit status instead of exiting."""
    try:
        result = cli.main(args=argv, prog_name="kafkacore", standalone_mode=False)
        return result if isinstance(result, int) else Exit.OK
    except click.exceptions.Exit as exc:
        return exc.exit_code
    except CliError as exc:
        exc.show()
        return exc.exit_code
    except click.ClickException as exc:  # usage errors: click's own message, status 2
        exc.show()
        return exc.exit_code
    except (click.Abort, KeyboardInterrupt):
        click.echo("kafkacore: interrupted", err=True)
        return Exit.INTERRUPTED
    except (BrokenPipeError, ReaderGone):
        # The reader went away (`kafkacore consume ... | head`): end quietly, as cat does.
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        return Exit.OK
    except Exception as exc:
        code = classify(exc)
        if code is Exit.FAILED and not _expected(exc):
            raise  # a bug: keep the traceback
        click.echo(f"kafkacore: error: {describe(exc)}", err=True)
        return code


def _expected(exc: BaseException) -> bool:
    from kafkacore.errors import KafkaError

    return isinstance(exc, KafkaError | OSError)
