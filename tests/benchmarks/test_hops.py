"""benchmarks/hops.py: the hop counter over a small fake path, and the real paths on a broker.

The fake path is a module written to a temporary package: a "producer"
whose ``send`` prepares the value and queues it, a ``pump`` that builds a
checksummed batch and writes it to one end of a socket pair, a read of the
answer that resolves the future; and a "consumer" whose loop thread reads
a frame and parses records that the user's ``poll`` takes. Each function
is there to be counted (or not) for a reason the assertions name.
"""

from __future__ import annotations

import importlib
import socket
import sys
import textwrap
import threading
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType

import hops
import pytest

from kafkacore.testing.cluster import LocalKafka

FAKE = """
import zlib
from concurrent.futures import Future

from fakekafka import generated


class Producer:
    def __init__(self, sock):
        self.sock = sock
        self.queue = []
        self.pending = None

    def send(self, value):
        fut = Future()
        self._submit(_prepare(value), fut)
        return fut

    def _submit(self, item, fut):
        self.queue.append((item, fut))

    def pump(self):
        item, self.pending = self.queue.pop()
        batch = build(item)
        _unrelated(3)
        self.sock.send(batch)

    def on_readable(self):
        data = self.sock.recv(4096)
        self.pending.set_result(decode(data))


class Response:
    def __init__(self, body):
        self.body = body


def _prepare(value):
    return bytearray(value)


def build(item):
    body = bytes(item)
    sizes = [len(part) for part in (b"HDR", body)]
    return generated.encode(b"HDR" + body + crc32c(body).to_bytes(4, "big"), sizes)


def crc32c(data):
    return zlib.crc32(data)


def decode(data):
    return Response(data[4:])


def _unrelated(n):
    return n + 1


class Consumer:
    def __init__(self, sock):
        self.sock = sock
        self.records = []
        self.ready = __import__("threading").Event()

    def loop_once(self):
        data = self.sock.recv(4096)
        self.records.extend(parse(data))
        _unrelated(1)
        self.ready.set()

    def poll(self, timeout):
        self.ready.wait(timeout)
        return self._take()

    def _take(self):
        out, self.records = self.records, []
        return out


class Record:
    def __init__(self, value):
        self.value = value


def parse(data):
    return [Record(data[8:])]
"""

GENERATED = """
def encode(data, sizes):
    return data
"""

MARKER = b"hops-test-marker-0123456789"


@pytest.fixture
def fake(tmp_path: Path) -> Iterator[ModuleType]:
    package = tmp_path / "fakekafka"
    package.mkdir()
    (package / "__init__.py").write_text("")
    (package / "path.py").write_text(textwrap.dedent(FAKE))
    (package / "generated.py").write_text(textwrap.dedent(GENERATED))
    sys.path.insert(0, str(tmp_path))
    try:
        yield importlib.import_module("fakekafka.path")
    finally:
        sys.path.remove(str(tmp_path))
        for name in [n for n in sys.modules if n.startswith("fakekafka")]:
            del sys.modules[name]


def _recorder(fake: ModuleType) -> hops.Recorder:
    package = Path(fake.__file__ or "").parent
    return hops.Recorder(
        {"fakekafka": package}, MARKER, generated=lambda n: n.startswith("fakekafka.generated")
    )


def _short(names: list[str]) -> list[str]:
    return [n.removeprefix("fakekafka.path.") for n in names]


def test_produce_legs_count_the_chain_the_hops_the_checksum_and_the_copies(
    fake: ModuleType,
) -> None:
    ours, peer = socket.socketpair()
    recorder = _recorder(fake)
    recorder.install()
    try:
        producer = fake.Producer(ours)
        value = MARKER + b"." * 40
        with recorder.armed():
            mark = recorder.seq
            future = producer.send(value)
            producer.pump()
            request = peer.recv(4096)
            peer.send(b"SIZE" + b"response-body-" * 4)
            producer.on_readable()
    finally:
        recorder.uninstall()
        ours.close()
        peer.close()
    assert MARKER in request
    user = threading.get_ident()

    out = hops.outbound_leg(recorder, mark, user)
    assert (out.start, out.end) == ("fakekafka.path.Producer.send", "socket.send")
    assert out.end_stack == ("fakekafka.path.Producer.pump",)  # the write's caller
    # Every function between the call and the write, each once.
    assert _short([h.name for h in out.hops]) == [
        "Producer.send",
        "_prepare",
        "Producer._submit",
        "Producer.pump",
        "build",
        "crc32c",
        "_unrelated",
    ]
    assert out.calls == 7
    # The chain drops _unrelated: it never holds the record and never calls a function that does.
    assert _short(out.chain) == [
        "Producer.send",
        "_prepare",
        "Producer._submit",
        "Producer.pump",
        "build",
        "crc32c",
    ]
    assert (out.generated, out.comprehensions, out.crc) == (1, 1, 1)
    # The value, its bytearray copy, bytes(item) (first handed to the list comprehension),
    # and the framed batch (first handed to the generated encoder).
    assert [(b.type, b.seen_in.removeprefix("fakekafka.path.")) for b in out.buffers] == [
        ("bytes", "Producer.send"),
        ("bytearray", "_prepare"),
        ("bytes", "build.<locals>.<listcomp>"),
        ("bytes", "fakekafka.generated.encode"),
    ]

    back = hops.inbound_leg(recorder, mark, future)
    # The record's light future is resolved where its batch fans out (fan_out
    # stores the outcome); a set_result of a concurrent future the same
    # answer completes may be seen first.
    assert back.start == "socket.recv" and back.end in ("fan_out", "set_result")
    assert _short([h.name for h in back.hops]) == ["decode", "Response.__init__"]
    # The read's bytes are followed into decode and the object it returns.
    assert _short(back.chain) == ["Producer.on_readable", "decode", "Response.__init__"]
    assert future.result(timeout=0).body.startswith(b"response-body-")

    summary = hops.summarize([out, back])
    assert summary["produce"] == {
        "hops": 9,
        "distinct_functions": 9,
        "chain": 9,
        "calls": 9,
        "crc": 1,
    }


def test_poll_leg_spans_the_loop_thread_from_the_read_and_the_user_call(
    fake: ModuleType,
) -> None:
    ours, peer = socket.socketpair()
    recorder = _recorder(fake)
    recorder.install()
    try:
        consumer = fake.Consumer(ours)
        peer.send(b"SIZEHEAD" + MARKER + b"." * 20)
        loop = threading.Thread(target=consumer.loop_once)
        with recorder.armed():
            mark = recorder.seq
            loop.start()
            records = consumer.poll(10.0)
            loop.join(10.0)
    finally:
        recorder.uninstall()
        ours.close()
        peer.close()
    assert records[0].value.startswith(MARKER)

    leg = hops.poll_leg(recorder, mark, threading.get_ident())
    assert (leg.start, leg.end) == ("socket.recv", "fakekafka.path.Consumer.poll")
    names = {h.name.removeprefix("fakekafka.path."): h.thread for h in leg.hops}
    # The loop thread's work after the read (loop_once returns in the window), and the
    # user's poll (which may have waited).
    assert names == {
        "Consumer.loop_once": "loop",
        "parse": "loop",
        "Record.__init__": "loop",
        "_unrelated": "loop",
        "Consumer.poll": "user",
        "Consumer._take": "user",
    }
    assert set(_short(leg.chain)) == {
        "Consumer.loop_once",
        "parse",
        "Record.__init__",
        "Consumer.poll",
        "Consumer._take",
    }
    assert [b.type for b in leg.buffers][-1] == "bytes"  # the record's value, cut from the frame


def test_a_disarmed_recorder_sees_nothing(fake: ModuleType) -> None:
    ours, peer = socket.socketpair()
    recorder = _recorder(fake)
    recorder.install()
    try:
        fake.Producer(ours).send(MARKER)
    finally:
        recorder.uninstall()
        ours.close()
        peer.close()
    assert recorder.events == [] and recorder.buffers == []
    with pytest.raises(RuntimeError, match="no user call among the recorded events"):
        hops.outbound_leg(recorder, 0, threading.get_ident())


@pytest.mark.broker
def test_the_measured_paths_start_at_the_user_call_and_reach_the_socket(
    kafka_broker: LocalKafka,
) -> None:
    legs, meta = hops.measure(kafka_broker.bootstrap)
    out, back, poll = legs
    assert meta["tree"] == str(Path(hops.__file__).resolve().parents[1])

    assert out.start == "kafkacore.transports._producer_selector.KafkaProducer.send"
    assert out.end == "socket.send"
    assert out.end_stack[-1].startswith(
        "kafkacore.transports."
    )  # the transport hands bytes to the socket
    assert out.chain[0] == out.start
    assert any(n.startswith("kafkacore.producer.") for n in out.chain)
    assert any(n.startswith("kafkacore.client.") for n in out.chain)
    assert len(out.buffers) >= 2  # the value and the request that carries it

    # The record's light future is resolved where its batch fans out (fan_out
    # stores the outcome); a set_result of a concurrent future the same
    # answer completes may be seen first.
    assert back.start == "socket.recv" and back.end in ("fan_out", "set_result")
    assert any(n.startswith("kafkacore.producer.") for n in back.chain)

    assert poll.start == "socket.recv"
    assert poll.end == "kafkacore.transports._consumer_selector.KafkaConsumer.poll_records"
    assert any(n.startswith("kafkacore.consumer.") for n in poll.chain)
    assert any(n.startswith("kafkacore.records.") for n in poll.chain)

    for leg in legs:
        assert leg.chain and leg.hop_count and leg.calls, leg.name
        # A chain frame that did not run in the window can only be the transport's
        # loop below the leg's first event (the pass that was already running).
        ran = {h.name for h in leg.hops}
        outside = [n for n in leg.chain if n not in ran]
        assert all(n.startswith("kafkacore.transports.") for n in outside), (leg.name, outside)
