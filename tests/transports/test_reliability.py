"""Issue 10 through each transport: causes reach the caller's future, and logging.

The misbehaving broker is the small socket fake of ``tests/client/sockbroker.py``
(the fake broker's handlers on a real localhost socket); the fault campaign's
byte-level broker is elsewhere (``tests/faults``).
"""

from __future__ import annotations

import logging
import subprocess
import sys
from pathlib import Path

import pytest

from kafkacore.errors import DecodeError, KafkaConnectionError
from kafkacore.protocol.messages import ProduceRequest, ProduceResponse
from tests.client.sockbroker import SocketBroker

from .conftest import Flavor

pytestmark = pytest.mark.anyio

ROOT = Path(__file__).resolve().parents[2]
GARBAGE = b"\xff\xff\xff\xffjunk"


async def test_ack_before_garbage_reaches_the_caller_and_the_cause_is_kept(
    flavor: Flavor, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG, logger="kafkacore")
    fake = SocketBroker(reply_after=2)  # both requests in flight when the answers come
    fake.broker.after_reply[0] = GARBAGE  # every acknowledgement is followed by garbage
    try:
        async with flavor.client(fake.bootstrap) as client:
            results = await client.send_many(
                [ProduceRequest(acks=1), ProduceRequest(acks=1)], node_id=0
            )
    finally:
        fake.close()
    # The first request written got its acknowledgement (it was not lost to the
    # garbage behind it); the other failed with the cause.
    acks = [r for r in results if isinstance(r, ProduceResponse)]
    errors = [r for r in results if not isinstance(r, ProduceResponse)]
    assert len(acks) == 1 and len(errors) == 1, results
    error = errors[0]
    assert isinstance(error, KafkaConnectionError), error
    where = f"broker 0 at 127.0.0.1:{fake.port}"
    assert where in str(error) and "frame size" in str(error)
    assert isinstance(error.__cause__, DecodeError)
    assert str(error.__cause__).startswith(where)
    lines = [(r.levelno, r.getMessage()) for r in caplog.records if r.name == "kafkacore.client"]
    # Only this broker's lines: caplog sees every kafkacore client in the process.
    closed = [t for level, t in lines if level == logging.WARNING and "closed" in t and where in t]
    assert closed and "frame size" in closed[0], lines
    assert any(level == logging.INFO and "is ready" in text for level, text in lines), lines
    assert any("next connection in" in text for _, text in lines), lines


async def test_unknown_topic_error_code_reaches_the_caller(flavor: Flavor) -> None:
    from kafkacore.client import PartitionLeader
    from kafkacore.errors import BrokerError
    from tests.client.fakebroker import Topic

    fake = SocketBroker([Topic("t", 1, error_code=32767)])
    try:
        async with flavor.client(fake.bootstrap) as client:
            (error,) = await client.send_many(
                [ProduceRequest(acks=1)], target=PartitionLeader("t", 0)
            )
    finally:
        fake.close()
    assert isinstance(error, BrokerError) and error.code == 32767
    assert "unknown error code 32767 from broker 0" in str(error) and "'t'" in str(error)


SCRIPT = """
import asyncio, trio
from kafkacore.errors import NoBrokersAvailable
from kafkacore.transports.selector import KafkaClient
from kafkacore.transports.asyncio import AsyncKafkaClient
from kafkacore.transports.trio import TrioKafkaClient

ADDRESS = {address!r}
BOUND = {{"request_timeout_ms": 1000}}  # connect()'s bound: then NoBrokersAvailable
try:
    with KafkaClient(ADDRESS, **BOUND):
        pass
except NoBrokersAvailable:
    pass

async def on_asyncio():
    try:
        async with AsyncKafkaClient(ADDRESS, **BOUND):
            pass
    except NoBrokersAvailable:
        pass

async def on_trio():
    try:
        async with TrioKafkaClient(ADDRESS, **BOUND):
            pass
    except NoBrokersAvailable:
        pass

asyncio.run(on_asyncio())
trio.run(on_trio)
print("ok")
"""


def test_logging_is_quiet_until_the_application_configures_it(dead_address: str) -> None:
    # Without a NullHandler on "kafkacore", Python's last-resort handler would
    # print the WARNING "bootstrap failed" lines to stderr.
    proc = subprocess.run(
        [sys.executable, "-c", SCRIPT.format(address=dead_address)],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=120,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == "ok\n"
    assert proc.stderr == ""


@pytest.mark.parametrize("anyio_backend", ["asyncio"])
async def test_log_lines_for_a_dead_bootstrap_server(
    dead_address: str, caplog: pytest.LogCaptureFixture, anyio_backend: str
) -> None:
    from kafkacore.errors import NoBrokersAvailable
    from kafkacore.transports.asyncio import AsyncKafkaClient

    caplog.set_level(logging.INFO, logger="kafkacore")
    with pytest.raises(NoBrokersAvailable):
        async with AsyncKafkaClient(dead_address, client_id="app-7", request_timeout_ms=1000):
            pass
    lines = [(r.levelno, r.getMessage()) for r in caplog.records if r.name == "kafkacore.client"]
    assert any(
        level == logging.WARNING and text.startswith("[app-7] bootstrap failed, still trying")
        for level, text in lines
    ), lines
    assert any(
        level == logging.WARNING and f"bootstrap server {dead_address}" in text and "closed" in text
        for level, text in lines
    ), lines


def test_router_fails_later_bootstrap_waits_after_an_authentication_failure() -> None:
    from kafkacore.client import AuthenticationFailed
    from kafkacore.errors import AuthenticationError
    from kafkacore.transports._router import Router

    router = Router()
    error = AuthenticationError("node -1: SASL PLAIN authentication failed")
    router.on_event(AuthenticationFailed(node_id=-1, error=error))
    seen: list[BaseException | None] = []
    router.expect_bootstrap(lambda _value, err: seen.append(err), object)
    # The core stopped: no metadata will ever come, so waiting would hang.
    assert seen == [error]


def _sasl_broker() -> SocketBroker:
    fake = SocketBroker()
    fake.broker.require_auth = True
    return fake


SASL_WRONG = {
    "security_protocol": "SASL_PLAINTEXT",
    "sasl_mechanism": "PLAIN",
    "sasl_plain_username": "alice",
    "sasl_plain_password": "not-alice-secret",
    "reconnect_backoff_ms": 1,
    "reconnect_backoff_max_ms": 1,
}


def test_selector_second_connect_after_wrong_password_fails_at_once() -> None:
    from kafkacore.errors import AuthenticationError
    from kafkacore.transports.selector import KafkaClient

    fake = _sasl_broker()
    client = KafkaClient(fake.bootstrap, **SASL_WRONG)
    try:
        for _ in range(2):
            with pytest.raises(AuthenticationError):
                client.connect(timeout=10)
        opened = client.run_on_loop(lambda core: core.metrics().connections_opened)
    finally:
        client.close()
        fake.close()
    assert opened == 1 and fake.connections == 1


@pytest.mark.parametrize("anyio_backend", ["asyncio"])
async def test_asyncio_second_connect_after_wrong_password_fails_at_once(
    anyio_backend: str,
) -> None:
    import anyio

    from kafkacore.errors import AuthenticationError
    from kafkacore.transports.asyncio import AsyncKafkaClient

    fake = _sasl_broker()
    client = AsyncKafkaClient(fake.bootstrap, **SASL_WRONG)
    try:
        for _ in range(2):
            with anyio.fail_after(10), pytest.raises(AuthenticationError):
                await client.connect()
        opened = client.run_on_loop(lambda core: core.metrics().connections_opened)
    finally:
        await client.close()
        fake.close()
    assert opened == 1 and fake.connections == 1


def test_client_log_has_a_line_for_every_trace_the_core_emits(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """Drive the core through failures, retries and recoveries with the logging
    hook attached: every trace name gets its own formatted line (no fallback)."""
    import random

    from kafkacore.client import ClientConfig, GroupCoordinator, KafkaClientCore, Node
    from kafkacore.protocol import messages as m
    from kafkacore.protocol.messages.find_coordinator_response import Coordinator
    from kafkacore.transports._log import ClientLog
    from tests.client.fakebroker import Pump, Topic, boot, make_cluster

    caplog.set_level(logging.DEBUG, logger="kafkacore")
    names: set[str] = set()

    def watch(core: KafkaClientCore) -> None:
        core.add_trace(lambda name, _fields: names.add(name))
        core.add_trace(ClientLog(client_id="t"))

    # Bootstrap failure, then a broker that breaks the protocol, a topic error,
    # coordinator misses, REBOOTSTRAP_REQUIRED.
    dead = KafkaClientCore(
        ClientConfig(bootstrap_servers="127.0.0.1:1"), now=0.0, rng=random.Random(0)
    )
    watch(dead)
    Pump(dead, {}).run(rounds=5, jump=False)
    core, pump, cluster = boot(1, [Topic("bad", 1, error_code=32767)])
    watch(core)
    broker = next(iter(pump.brokers.values()))
    broker.after_reply[3] = GARBAGE
    h = core.send(m.MetadataRequest(topics=[]), target=Node(0), now=pump.now)
    pump.run(until=lambda: h.done)
    broker.after_reply.clear()
    w = core.add_topic("bad", now=pump.now)
    pump.run(until=lambda: w.done)
    broker.handlers[10] = lambda b, body, v, s: m.FindCoordinatorResponse(
        coordinators=[
            Coordinator(key=k, node_id=-1, host="", port=-1, error_code=15)
            for k in body.coordinator_keys
        ]
    )
    h = core.send(m.MetadataRequest(topics=[]), target=GroupCoordinator("g"), now=pump.now)
    pump.run(until=lambda: "coordinator_retry" in names)
    cluster.error_code = 129
    w = core.request_metadata_update(now=pump.now)
    pump.run(until=lambda: w.done)
    # Authentication failure.
    sasl = KafkaClientCore(
        ClientConfig(
            bootstrap_servers="127.0.0.1:9092",
            security_protocol="SASL_PLAINTEXT",
            sasl_mechanism="PLAIN",
            sasl_plain_username="alice",
            sasl_plain_password="wrong-pw-77",
        ),
        now=0.0,
        rng=random.Random(0),
    )
    watch(sasl)
    _, fakes = make_cluster(1)
    next(iter(fakes.values())).require_auth = True
    Pump(sasl, fakes).run(until=lambda: sasl.authentication_error is not None)

    expected = {
        "connect",
        "connection_state",
        "reconnect_backoff",
        "metadata_request",
        "metadata_updated",
        "metadata_failed",
        "topic_error",
        "coordinator_retry",
        "bootstrap_failed",
        "authentication_failed",
        "rebootstrap",
        "send",
        "complete",
    }
    assert expected <= names, expected - names
    lines = [r.getMessage() for r in caplog.records if r.name == "kafkacore.client"]
    # Every line was formatted on purpose (the fallback is "name key=value").
    assert not any(line.split(" ", 2)[1] in expected for line in lines), lines
    assert not any("wrong-pw-77" in line for line in lines)


def test_a_refresh_cancelled_by_our_own_close_is_not_a_warning(
    caplog: pytest.LogCaptureFixture,
) -> None:
    from kafkacore.errors import KafkaConnectionError, RequestCancelled
    from kafkacore.transports._log import ClientLog

    caplog.set_level(logging.DEBUG, logger="kafkacore")
    log = ClientLog(client_id="t")
    log(
        "metadata_failed",
        {"attempts": 1, "retry_in_ms": 100, "error": RequestCancelled("client shut down")},
    )
    log(
        "metadata_failed",
        {"attempts": 2, "retry_in_ms": 100, "error": KafkaConnectionError("reset")},
    )
    levels = [(r.levelno, "shut down" in r.getMessage()) for r in caplog.records]
    assert levels == [(logging.DEBUG, True), (logging.WARNING, False)]
