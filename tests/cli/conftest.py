"""The ``kafkacore`` command line run as a subprocess against real brokers.

``cli`` runs ``python -m kafkacore.transports.cli -b <kafka_broker>`` and
returns the finished process (stdout, stderr, exit status). The broker with
the authorizer on is the kit's ``kafka_acl_broker`` (one per session, shared
with tests/admin): PLAINTEXT is a super user (ANONYMOUS), SASL_PLAINTEXT
authenticates ``admin`` (a super user), ``alice`` and ``bob``.
"""

from __future__ import annotations

import os
import subprocess
import sys
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from kafkacore import KafkaAdminClient
from kafkacore.testing import LocalKafka

#: Where a test must not wait longer for one command (the machine is shared).
COMMAND_TIMEOUT = 90.0

#: ``python -m kafkacore.transports.cli`` that turns SIGINT into KeyboardInterrupt,
#: as when Ctrl-C is typed at a terminal. A test run started in the background
#: (``&`` in a script, nohup, a CI runner) hands its children SIGINT ignored, and
#: Python then installs no handler for it: the SIGINT a test sends is lost and
#: ``kafkacore consume`` goes on for ever (issue 25). The command line itself
#: keeps the convention of every Unix tool: an ignored SIGINT stays ignored.
INTERRUPTIBLE = (
    sys.executable,
    "-c",
    "import runpy, signal; signal.signal(signal.SIGINT, signal.default_int_handler); "
    "runpy.run_module('kafkacore.transports.cli', run_name='__main__', alter_sys=True)",
)


@dataclass
class Result:
    """A finished ``kafkacore`` run."""

    args: tuple[str, ...]
    code: int
    out: str
    err: str

    def ok(self) -> Result:
        assert self.code == 0, f"kafkacore {' '.join(self.args)} -> {self.code}\n{self.err}"
        return self


def clean_env(**extra: str) -> dict[str, str]:
    """The environment without any KAFKACORE_* connection setting of the caller's."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("KAFKACORE_")}
    env.update(extra)
    return env


def run_cli(
    *args: str,
    input: str | None = None,
    env: dict[str, str] | None = None,
    program: tuple[str, ...] = (sys.executable, "-m", "kafkacore.transports.cli"),
) -> Result:
    proc = subprocess.run(
        [*program, *args],
        input=input,
        capture_output=True,
        text=True,
        env=clean_env() if env is None else env,
        timeout=COMMAND_TIMEOUT,
    )
    return Result(args, proc.returncode, proc.stdout, proc.stderr)


Cli = Callable[..., Result]


@pytest.fixture
def cli(kafka_broker: LocalKafka) -> Cli:
    """``cli("topics", "list")``: the command line against the shared broker."""

    def run(*args: str, input: str | None = None, env: dict[str, str] | None = None) -> Result:
        return run_cli("-b", kafka_broker.bootstrap, *args, input=input, env=env)

    return run


@pytest.fixture
def admin(kafka_broker: LocalKafka) -> Iterator[KafkaAdminClient]:
    """An admin client to check what the command line did (or did not do)."""
    with KafkaAdminClient(kafka_broker.bootstrap, client_id="cli-test-check") as client:
        yield client


@pytest.fixture
def unique() -> str:
    """A per-test name suffix (topics and groups outlive tests on the shared broker)."""
    return uuid.uuid4().hex[:8]


@pytest.fixture
def admin_properties(kafka_acl_broker: LocalKafka, tmp_path: Path) -> str:
    """A properties file logging ``admin`` (the super user) in over SASL/SCRAM."""
    host, port = kafka_acl_broker.listener("SASL_PLAINTEXT")
    path = tmp_path / "admin.properties"
    path.write_text(
        "# the super user, over SASL/SCRAM\n"
        f"bootstrap.servers={host}:{port}\n"
        "security.protocol=SASL_PLAINTEXT\n"
        "sasl.mechanism=SCRAM-SHA-256\n"
        "sasl.jaas.config=org.apache.kafka.common.security.scram.ScramLoginModule required \\\n"
        f'    username="admin" password="{kafka_acl_broker.users["admin"]}";\n'
    )
    return str(path)
