"""KIP-714 against a real Kafka 4.3.1 broker.

A broker-side telemetry plugin (``java/FileTelemetryReporter.java``, a
MetricsReporter implementing ClientTelemetry, compiled here from the Maven
jars as the Kerberos helper is) writes every payload it receives to a
file; kafkacore's producer and consumer run on that broker with a client
metrics subscription, and the files must decode as OTLP ``MetricsData``
carrying the metric names kafkacore promises. On close, each client's last
push is marked terminating (the plugin names the file so) and reached the
broker before ``close()`` returned, on every transport; every point is dated
in Unix time. The default broker (no plugin) must see no telemetry request
at all.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import os
import shutil
import subprocess
import tempfile
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
import trio
from opentelemetry.proto.metrics.v1 import metrics_pb2

from kafkacore.errors import NoCommonVersionError
from kafkacore.protocol.enums import ApiKey
from kafkacore.telemetry import TelemetryState
from kafkacore.testing import LocalKafka
from kafkacore.transports.asyncio import (
    AsyncKafkaAdminClient,
    AsyncKafkaConsumer,
    AsyncKafkaProducer,
    AsyncKafkaShareConsumer,
)
from kafkacore.transports.selector import (
    KafkaAdminClient,
    KafkaClient,
    KafkaConsumer,
    KafkaProducer,
    KafkaShareConsumer,
)
from kafkacore.transports.trio import (
    TrioKafkaAdminClient,
    TrioKafkaClient,
    TrioKafkaConsumer,
    TrioKafkaProducer,
    TrioKafkaShareConsumer,
)

pytestmark = [pytest.mark.broker, pytest.mark.java]

_SOURCE = Path(__file__).with_name("java") / "FileTelemetryReporter.java"
_PLUGIN = "FileTelemetryReporter"
_INTERVAL_MS = 1000


def _plugin_classes(libs: Path) -> Path:
    """Compile the plugin once per source version, beside the cached Kafka jars."""
    digest = hashlib.sha256(_SOURCE.read_bytes()).hexdigest()[:16]
    classes = libs.parent / f"telemetry-plugin-{digest}"
    if (classes / f"{_PLUGIN}.class").is_file():
        return classes
    javac = shutil.which("javac")
    assert javac is not None, "javac (a JDK 17+) builds the telemetry plugin"
    fresh = Path(tempfile.mkdtemp(prefix="telemetry-plugin-new-", dir=libs.parent))
    try:
        proc = subprocess.run(
            [javac, "-nowarn", "-d", str(fresh), "-cp", str(libs / "*"), str(_SOURCE)],
            capture_output=True, text=True, timeout=300, check=False,
        )  # fmt: skip
        assert proc.returncode == 0, f"javac failed on {_SOURCE}:\n{proc.stderr[-2000:]}"
        with contextlib.suppress(OSError):  # another process compiled it meanwhile
            fresh.rename(classes)
    finally:
        if fresh.exists():
            shutil.rmtree(fresh, ignore_errors=True)
    return classes


class _PluginKafka(LocalKafka):
    """LocalKafka with the plugin's class directory on the broker's classpath."""

    def __init__(self, plugin: Path, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self._plugin = plugin

    @property
    def classpath(self) -> str:
        return f"{super().classpath}{os.pathsep}{self._plugin}"


@pytest.fixture(scope="module")
def telemetry_broker(
    kafka_libs: Path, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[tuple[LocalKafka, Path]]:
    received = tmp_path_factory.mktemp("telemetry")
    overrides = {"metric.reporters": _PLUGIN, "kafkacore.telemetry.dir": str(received)}
    with _PluginKafka(_plugin_classes(kafka_libs), size=1, overrides=overrides) as kafka:
        # A client metrics subscription: every metric, every second, every client.
        kafka.run_tool(
            "org.apache.kafka.tools.ClientMetricsCommand",
            "--bootstrap-server", kafka.bootstrap,
            "--alter", "--name", "kafkacore-all",
            "--metrics", "*", "--interval", str(_INTERVAL_MS),
        )  # fmt: skip
        yield kafka, received


def _payloads(received: Path) -> list[tuple[str, metrics_pb2.MetricsData]]:
    """(file name, decoded MetricsData) of every push received so far."""
    out = []
    for path in sorted(received.glob("*.bin")):
        out.append((path.name, metrics_pb2.MetricsData.FromString(path.read_bytes())))
    return out


def _client_id(data: metrics_pb2.MetricsData) -> str:
    attrs = {a.key: a.value.string_value for a in data.resource_metrics[0].resource.attributes}
    return attrs["client_id"]


def _names(data: metrics_pb2.MetricsData) -> set[str]:
    return {m.name for rm in data.resource_metrics for sm in rm.scope_metrics for m in sm.metrics}


def _points(data: metrics_pb2.MetricsData) -> list[Any]:
    return [
        point
        for rm in data.resource_metrics
        for sm in rm.scope_metrics
        for metric in sm.metrics
        for point in (*metric.sum.data_points, *metric.gauge.data_points)
    ]


def _wait(
    what: str, done: Callable[[], bool], timeout: float = 60.0, why: Callable[[], Any] = str
) -> None:
    end = time.monotonic() + timeout
    while not done():
        assert time.monotonic() < end, f"timed out waiting for {what}: {why()}"
        time.sleep(0.2)


def test_producer_and_consumer_push_otlp_the_plugin_decodes(
    telemetry_broker: tuple[LocalKafka, Path],
) -> None:
    kafka, received = telemetry_broker
    tag = uuid.uuid4().hex[:8]
    topic = f"telemetry-{tag}"
    kafka.create_topic(topic)
    producer_id, consumer_id = f"tel-producer-{tag}", f"tel-consumer-{tag}"

    def pushed_by(client_id: str) -> list[metrics_pb2.MetricsData]:
        return [d for _, d in _payloads(received) if _client_id(d) == client_id]

    with KafkaProducer(kafka.bootstrap, client_id=producer_id) as producer:
        for i in range(20):
            producer.send(topic, f"v{i}".encode())
        producer.flush(30)
        consumer = KafkaConsumer(
            topic,
            bootstrap_servers=kafka.bootstrap,
            client_id=consumer_id,
            group_id=f"tel-group-{tag}",
            auto_offset_reset="earliest",
        )
        try:
            got = 0
            end = time.monotonic() + 60
            while got < 20 or len(pushed_by(consumer_id)) < 2:
                assert time.monotonic() < end, f"consumed {got}, pushes {_payloads(received)}"
                got += len(consumer.poll_records(timeout=0.2))
            _wait("two producer pushes", lambda: len(pushed_by(producer_id)) >= 2)
        finally:
            consumer.close()
    producer_names = set().union(*map(_names, pushed_by(producer_id)))
    consumer_names = set().union(*map(_names, pushed_by(consumer_id)))
    for name in (
        "org.apache.kafka.producer.connection.creation.total",
        "org.apache.kafka.producer.connection.creation.rate",
        "org.apache.kafka.producer.request.total",
        "org.apache.kafka.producer.outgoing.byte.total",
        "org.apache.kafka.producer.request.latency.avg",
    ):
        assert name in producer_names, sorted(producer_names)
    for name in (
        "org.apache.kafka.consumer.connection.creation.total",
        "org.apache.kafka.consumer.request.total",
        "org.apache.kafka.consumer.incoming.byte.total",
    ):
        assert name in consumer_names, sorted(consumer_names)
    last = pushed_by(producer_id)[-1]
    total = next(
        m for m in last.resource_metrics[0].scope_metrics[0].metrics
        if m.name == "org.apache.kafka.producer.request.total"
    )  # fmt: skip
    assert total.sum.is_monotonic and total.sum.data_points[0].as_int > 0


def test_a_broker_without_plugin_sees_no_telemetry_request(kafka_broker: LocalKafka) -> None:
    with KafkaClient(kafka_broker.bootstrap) as client:
        client.connect(timeout=30)

        def settled() -> bool:
            state = client.run_on_loop(lambda core: core.telemetry and core.telemetry.state)
            return state is TelemetryState.DISABLED

        _wait("telemetry to give up", settled, timeout=30)
        sent = client.run_on_loop(lambda core: dict(core.metrics().requests_by_api))
        versions = client.run_on_loop(lambda core: core.get_api_versions())
        why = client.run_on_loop(lambda core: core.telemetry and core.telemetry.last_error)
    # Kafka 4.3.1 without a plugin does not offer the APIs: kafkacore reads
    # that in ApiVersions and stops; nothing reaches the wire.
    assert isinstance(why, NoCommonVersionError)
    assert versions is not None and ApiKey.GET_TELEMETRY_SUBSCRIPTIONS not in versions
    assert ApiKey.GET_TELEMETRY_SUBSCRIPTIONS not in sent
    assert ApiKey.PUSH_TELEMETRY not in sent


def test_the_subscription_a_plugin_broker_gives(telemetry_broker: tuple[LocalKafka, Path]) -> None:
    kafka, received = telemetry_broker
    client_id = f"tel-client-{uuid.uuid4().hex[:8]}"
    with KafkaClient(kafka.bootstrap, client_id=client_id) as client:
        client.connect(timeout=30)

        def telemetry() -> Any:
            return client.run_on_loop(lambda core: core.telemetry)

        _wait("a subscription", lambda: telemetry().subscription is not None, timeout=30)
        machine = telemetry()
        sub = machine.subscription
        assert machine.client_instance_id is not None
        assert sub.prefixes == ("*",)
        assert sub.push_interval_ms == _INTERVAL_MS
        # The broker accepts every codec; kafkacore picks zstd and the broker,
        # which decompresses before the plugin sees the payload, read it.
        assert sub.compression.name == "ZSTD"
        assert sub.max_bytes > 0

        def pushed() -> list[metrics_pb2.MetricsData]:
            return [d for _, d in _payloads(received) if _client_id(d) == client_id]

        def state() -> Any:
            m = telemetry()
            sent = client.run_on_loop(lambda core: dict(core.metrics().requests_by_api))
            return (
                m.state,
                m.last_error,
                m.pushes,
                sent,
                sorted(p.name for p in received.iterdir()),
            )

        _wait("a push", lambda: bool(pushed()), timeout=30, why=state)
        assert "org.apache.kafka.client.request.total" in _names(pushed()[0])
        sent = client.run_on_loop(lambda core: dict(core.metrics().requests_by_api))
    assert sent[ApiKey.GET_TELEMETRY_SUBSCRIPTIONS] == 1
    assert sent[ApiKey.PUSH_TELEMETRY] >= 1


# -------------------------------------------------------------------------- close
_PUSH_WAIT_S = 30.0


def _close_on_selector(kafka: LocalKafka, topic: str, ids: dict[str, str], pushed: Any) -> None:
    producer = KafkaProducer(kafka.bootstrap, client_id=ids["producer"])
    consumer = KafkaConsumer(
        topic,
        bootstrap_servers=kafka.bootstrap,
        client_id=ids["consumer"],
        group_id=ids["consumer"],
        auto_offset_reset="earliest",
    )
    try:
        producer.send(topic, b"v")
        producer.flush(30)
        end = time.monotonic() + _PUSH_WAIT_S
        # A regular push from each first: both hold a subscription when they close.
        while not (pushed(ids["producer"]) and pushed(ids["consumer"])):
            assert time.monotonic() < end, f"selector: no push from {ids}"
            consumer.poll_records(timeout=0.1)
    finally:
        consumer.close(timeout_ms=10_000)
        producer.close(10)


async def _async_pair(
    producer: Any, consumer: Any, topic: str, ids: dict[str, str], pushed: Any, sleep: Any
) -> None:
    await (await producer.send(topic, b"v"))
    end = time.monotonic() + _PUSH_WAIT_S
    while not (pushed(ids["producer"]) and pushed(ids["consumer"])):
        assert time.monotonic() < end, f"no push from {ids}"
        await consumer.poll_records(timeout=0.1)
        await sleep(0)


def _close_on_asyncio(kafka: LocalKafka, topic: str, ids: dict[str, str], pushed: Any) -> None:
    async def main() -> None:
        producer = AsyncKafkaProducer(kafka.bootstrap, client_id=ids["producer"])
        consumer = AsyncKafkaConsumer(
            topic,
            bootstrap_servers=kafka.bootstrap,
            client_id=ids["consumer"],
            group_id=ids["consumer"],
            auto_offset_reset="earliest",
        )
        await producer.start()
        try:
            await _async_pair(producer, consumer, topic, ids, pushed, asyncio.sleep)
        finally:
            await consumer.close(timeout_ms=10_000)
            await producer.close(10)

    asyncio.run(main())


def _close_on_trio(kafka: LocalKafka, topic: str, ids: dict[str, str], pushed: Any) -> None:
    async def main() -> None:
        # Leaving the block closes both (the consumer first, as on the other transports).
        producer = TrioKafkaProducer(kafka.bootstrap, client_id=ids["producer"], close_timeout=10)
        consumer = TrioKafkaConsumer(
            topic,
            bootstrap_servers=kafka.bootstrap,
            client_id=ids["consumer"],
            group_id=ids["consumer"],
            auto_offset_reset="earliest",
        )
        async with producer, consumer:
            await _async_pair(producer, consumer, topic, ids, pushed, trio.sleep)

    trio.run(main)


Closer = Callable[[LocalKafka, str, dict[str, str], Callable[[str], bool]], None]


def _close_on_every_transport(
    kafka: LocalKafka,
    received: Path,
    closers: dict[str, Closer],
    roles: tuple[str, str],
    prefix: str,
) -> tuple[dict[str, dict[str, str]], dict[str, float]]:
    """Run each transport's closer at once (the test then costs about one
    client's time) on a fresh topic; the client ids per transport and role,
    and when each transport's clients had closed."""
    tag = uuid.uuid4().hex[:8]
    topic = f"{prefix}-{tag}"
    kafka.create_topic(topic)
    ids = {t: {role: f"tel-{t}-{role}-{tag}" for role in roles} for t in closers}

    def pushed(client_id: str) -> bool:
        return any(_client_id(d) == client_id for _, d in _payloads(received))

    closed_at: dict[str, float] = {}
    errors: dict[str, BaseException] = {}

    def run(transport: str) -> None:
        try:
            closers[transport](kafka, topic, ids[transport], pushed)
            closed_at[transport] = time.time()
        except BaseException as exc:
            errors[transport] = exc

    threads = [threading.Thread(target=run, args=(t,), name=f"tel-{t}") for t in closers]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(120)
    assert not errors, errors
    assert set(closed_at) == set(closers)
    return ids, closed_at


def _assert_one_goodbye_last(names: list[str], transport: str, role: str) -> None:
    """The client's pushes end with its one terminating push."""
    assert names and names[-1].endswith("-terminating.bin"), (transport, role, names)
    assert sum(n.endswith("-terminating.bin") for n in names) == 1, (transport, role, names)


_CLOSERS: dict[str, Closer] = {
    "selector": _close_on_selector,
    "asyncio": _close_on_asyncio,
    "trio": _close_on_trio,
}


def test_close_sends_a_terminating_push_dated_in_unix_time_on_every_transport(
    telemetry_broker: tuple[LocalKafka, Path],
) -> None:
    kafka, received = telemetry_broker
    ids, closed_at = _close_on_every_transport(
        kafka, received, _CLOSERS, ("producer", "consumer"), "telemetry-close"
    )

    def pushes(client_id: str) -> list[tuple[str, metrics_pb2.MetricsData]]:
        return [(name, d) for name, d in _payloads(received) if _client_id(d) == client_id]

    for transport, roles in ids.items():
        for role, client_id in roles.items():
            files = pushes(client_id)
            # Read right after close() returned: the close waited for the
            # broker's answer, which comes after the plugin has the payload.
            names = [name for name, _ in files]
            _assert_one_goodbye_last(names, transport, role)
            # One client instance: the terminating push is the same client's.
            instances = {name.split("-", 1)[1].rsplit("-", 1)[0] for name in names}
            assert len(instances) == 1, names
            for name, data in files:
                points = _points(data)
                assert points, name
                for point in points:
                    for ns in (point.time_unix_nano, point.start_time_unix_nano):
                        if ns:  # a gauge has no start time
                            assert abs(ns / 1e9 - closed_at[transport]) < 60, (name, ns)
            last_names = _names(files[-1][1])
            assert f"org.apache.kafka.{role}.request.total" in last_names, sorted(last_names)


def test_a_trio_client_leaving_its_block_cleanly_says_goodbye(
    telemetry_broker: tuple[LocalKafka, Path],
) -> None:
    # `async with TrioKafkaClient(...)` closes on the way out; a clean exit
    # must send the terminating push as `await client.close()` does.
    kafka, received = telemetry_broker
    client_id = f"tel-trio-client-{uuid.uuid4().hex[:8]}"

    def names() -> list[str]:
        return [name for name, d in _payloads(received) if _client_id(d) == client_id]

    async def main() -> None:
        async with TrioKafkaClient(kafka.bootstrap, client_id=client_id):
            end = time.monotonic() + _PUSH_WAIT_S
            while not names():  # one regular push: the client holds a subscription
                assert time.monotonic() < end, f"no push from {client_id}"
                await trio.sleep(0.05)

    trio.run(main)
    got = names()
    assert got[-1].endswith("-terminating.bin"), got
    assert sum(n.endswith("-terminating.bin") for n in got) == 1, got


# The admin client and the share consumer close through their own code on each
# transport; each must say goodbye as the producer and the consumer do.
def _admin_and_share_on_selector(
    kafka: LocalKafka, topic: str, ids: dict[str, str], pushed: Any
) -> None:
    with (
        KafkaAdminClient(bootstrap_servers=kafka.bootstrap, client_id=ids["admin"]) as admin,
        KafkaShareConsumer(
            topic, bootstrap_servers=kafka.bootstrap, client_id=ids["share"], group_id=ids["share"]
        ) as share,
    ):
        admin.list_topics()
        end = time.monotonic() + _PUSH_WAIT_S
        while not (pushed(ids["admin"]) and pushed(ids["share"])):
            assert time.monotonic() < end, f"selector: no push from {ids}"
            share.poll(0.1)


async def _async_admin_and_share(admin: Any, share: Any, ids: dict[str, str], pushed: Any) -> None:
    await admin.list_topics()
    end = time.monotonic() + _PUSH_WAIT_S
    while not (pushed(ids["admin"]) and pushed(ids["share"])):
        assert time.monotonic() < end, f"no push from {ids}"
        await share.poll(0.1)


def _admin_and_share_on_asyncio(
    kafka: LocalKafka, topic: str, ids: dict[str, str], pushed: Any
) -> None:
    async def main() -> None:
        admin = AsyncKafkaAdminClient(bootstrap_servers=kafka.bootstrap, client_id=ids["admin"])
        share = AsyncKafkaShareConsumer(
            topic, bootstrap_servers=kafka.bootstrap, client_id=ids["share"], group_id=ids["share"]
        )
        try:
            await _async_admin_and_share(admin, share, ids, pushed)
        finally:
            await share.close(10)
            await admin.close(10)

    asyncio.run(main())


def _admin_and_share_on_trio(
    kafka: LocalKafka, topic: str, ids: dict[str, str], pushed: Any
) -> None:
    async def main() -> None:
        # Leaving the block cleanly closes both, saying goodbye.
        async with (
            TrioKafkaAdminClient(
                bootstrap_servers=kafka.bootstrap, client_id=ids["admin"]
            ) as admin,
            TrioKafkaShareConsumer(
                topic,
                bootstrap_servers=kafka.bootstrap,
                client_id=ids["share"],
                group_id=ids["share"],
            ) as share,
        ):
            await _async_admin_and_share(admin, share, ids, pushed)

    trio.run(main)


_ADMIN_AND_SHARE: dict[str, Closer] = {
    "selector": _admin_and_share_on_selector,
    "asyncio": _admin_and_share_on_asyncio,
    "trio": _admin_and_share_on_trio,
}


def test_admin_and_share_consumer_close_with_a_terminating_push_on_every_transport(
    telemetry_broker: tuple[LocalKafka, Path],
) -> None:
    kafka, received = telemetry_broker
    ids, _ = _close_on_every_transport(
        kafka, received, _ADMIN_AND_SHARE, ("admin", "share"), "telemetry-share"
    )

    for transport, roles in ids.items():
        for role, client_id in roles.items():
            # Read right after close returned: the close waited for the answer.
            got = [name for name, d in _payloads(received) if _client_id(d) == client_id]
            _assert_one_goodbye_last(got, transport, role)
