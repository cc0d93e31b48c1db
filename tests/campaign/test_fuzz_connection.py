"""Fuzz the frame reader and every response decoder through the connection machine.

A :class:`~kafkacore.client.connection.BrokerConnection` is brought to READY
with a valid ApiVersions exchange; then a user request of some (API,
version) is written and the broker's "answer" is fed back: a valid response
drawn by hypothesis (every field of every version, ``tests.protocol.strategies``),
then mutated (bytes flipped, cut short, extended, its size prefix replaced,
another frame in front, or plain random bytes), in random chunk sizes down
to one byte.

Whatever arrives, the machine must:

* never raise out of ``data_received``;
* when it closes, give a :class:`~kafkacore.errors.RemoteProtocolError`
  (``DecodeError`` included) as the reason, nothing else;
* complete the request exactly once when it closes (or answers), with the
  response type or an error caused by that RemoteProtocolError;
* buffer no more than ``max_response_bytes`` and allocate nothing near a
  claimed size or count (tracemalloc peak, in its own test).

The default run draws a few inputs per API; ``--long`` draws thousands and
prints the count (recorded in docs/reliability.md).
"""

from __future__ import annotations

import random
import struct
import tracemalloc
from collections.abc import Iterator
from typing import Any

import pytest
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st

from kafkacore.client.config import ClientConfig
from kafkacore.client.connection import BrokerConnection
from kafkacore.client.handles import RequestHandle
from kafkacore.client.routing import Node
from kafkacore.errors import KafkaConnectionError, RemoteProtocolError
from kafkacore.protocol import framing
from kafkacore.protocol import messages as m
from kafkacore.protocol.api import APIS
from kafkacore.protocol.messages.api_versions_response import ApiVersion
from tests.campaign.conftest import say
from tests.protocol.strategies import message_strategy

MAX_RESPONSE = 1 << 20
CONFIG = ClientConfig(bootstrap_servers="127.0.0.1:9092", max_response_bytes=MAX_RESPONSE)
SHORT_EXAMPLES = 25
LONG_EXAMPLES = 600
#: Inputs fed by the tests of this module in this process (printed by --long).
FED = {"inputs": 0}


def ready_connection() -> BrokerConnection:
    conn = BrokerConnection(
        conn_id=1,
        node_id=1,
        lane="default",
        host="127.0.0.1",
        config=CONFIG,
        rng=random.Random(0),
        now=0.0,
    )
    conn.connection_made(now=0.0)
    [frame] = conn.pull_writes()
    header, _ = framing.decode_request(frame[4:])
    answer = m.ApiVersionsResponse(
        api_keys=[
            ApiVersion(api_key=k, min_version=i.min_version, max_version=i.max_version)
            for k, i in sorted(APIS.items())
        ]
    )
    conn.data_received(
        framing.encode_response(
            answer, version=header.request_api_version, correlation_id=header.correlation_id
        ),
        now=0.0,
    )
    assert conn.ready, conn.close_error
    return conn


def send(conn: BrokerConnection, api_key: int, version: int, hid: int) -> tuple[RequestHandle, int]:
    info = APIS[api_key]
    request = info.request_type()
    handle = RequestHandle(id=hid, request=request, api_key=api_key, target=Node(1), lane="default")
    conn.send(handle, request, version=version, now=0.0)
    [frame] = conn.pull_writes()
    header, _ = framing.decode_request(frame[4:])
    return handle, header.correlation_id


MUTATIONS = ("none", "flip", "truncate", "extend", "size", "junk_after", "frame_before", "random")


def mutate(frame: bytes, how: str, rnd: random.Random) -> bytes:
    raw = bytearray(frame)
    if how == "flip":
        for _ in range(rnd.randint(1, 6)):
            i = rnd.randrange(4, len(raw)) if len(raw) > 4 else 0
            raw[i] = rnd.randrange(256)
    elif how == "truncate":
        del raw[rnd.randrange(len(raw)) :]
    elif how == "extend":
        raw += rnd.randbytes(rnd.randint(1, 64))
        struct.pack_into(">i", raw, 0, len(raw) - 4)  # a well-framed body with trailing bytes
    elif how == "size":
        struct.pack_into(">i", raw, 0, rnd.choice([-1, -(2**31), 2**31 - 1, MAX_RESPONSE + 1, 0]))
    elif how == "junk_after":
        raw += rnd.randbytes(rnd.randint(1, 16))
    elif how == "frame_before":
        other = struct.pack(">i", 8) + struct.pack(">i", rnd.randrange(2**31)) + b"\0\0\0\0"
        raw = bytearray(other) + raw
    elif how == "random":
        raw = bytearray(rnd.randbytes(rnd.randint(0, 200)))
    return bytes(raw)


def feed(conn: BrokerConnection, data: bytes, rnd: random.Random) -> None:
    pos = 0
    while pos < len(data) and not conn.closed:
        step = rnd.choice([1, 2, 3, 7, 64, 4096, len(data)])
        conn.data_received(data[pos : pos + step], now=0.0)
        pos += step
    FED["inputs"] += 1


def check(conn: BrokerConnection, handle: RequestHandle, api_key: int, label: str) -> list[Any]:
    completions = [c for c in conn.pull_completions() if c.handle is handle]
    assert len(completions) <= 1, f"{label}: completed {len(completions)} times"
    if conn.closed:
        reason = conn.close_error
        assert isinstance(reason, RemoteProtocolError), f"{label}: closed because {reason!r}"
        assert completions, f"{label}: connection closed, request never completed ({reason})"
    if completions:
        [c] = completions
        if c.error is None:
            assert isinstance(c.response, APIS[api_key].response_type), label
        else:
            err = c.error
            cause = err if isinstance(err, RemoteProtocolError) else err.__cause__
            assert isinstance(err, RemoteProtocolError | KafkaConnectionError), f"{label}: {err!r}"
            assert isinstance(cause, RemoteProtocolError), f"{label}: {err!r} caused by {cause!r}"
    else:
        assert conn.in_flight_count == 1, label
    assert conn._reader.buffered <= MAX_RESPONSE + 4, label
    return completions


API_KEYS = sorted(APIS)


@pytest.fixture(scope="module", autouse=True)
def report_fuzz_count(request: pytest.FixtureRequest) -> Iterator[None]:
    """Print how many inputs this module fed (the count docs/reliability.md records)."""
    yield
    say(request.config, f"fuzz: {FED['inputs']} inputs fed through BrokerConnection")


def _examples(request: pytest.FixtureRequest) -> int:
    return LONG_EXAMPLES if request.config.getoption("--long") else SHORT_EXAMPLES


@pytest.mark.parametrize("api_key", API_KEYS, ids=[APIS[k].name for k in API_KEYS])
def test_any_answer_to_any_request_closes_cleanly_or_completes(
    api_key: int, request: pytest.FixtureRequest
) -> None:
    info = APIS[api_key]
    response_cls = info.response_type

    @settings(
        max_examples=_examples(request),
        deadline=None,
        derandomize=False,
        # No shrinking: the failure message names API, version, mutation and
        # seed already, and shrinking costs minutes per failing API.
        phases=[Phase.explicit, Phase.reuse, Phase.generate],
        suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
    )
    @given(
        version=st.integers(info.min_version, info.max_version),
        data=st.data(),
        how=st.sampled_from(MUTATIONS),
        seed=st.integers(0, 2**32 - 1),
    )
    def run(version: int, data: st.DataObject, how: str, seed: int) -> None:
        rnd = random.Random(seed)
        conn = ready_connection()
        handle, corr = send(conn, api_key, version, hid=1)
        message = data.draw(message_strategy(response_cls, version))
        frame = framing.encode_response(message, version=version, correlation_id=corr)
        label = f"{info.name} v{version} {how} seed {seed}"
        feed(conn, mutate(frame, how, rnd), rnd)
        done = check(conn, handle, api_key, label)
        if how == "none":
            assert [c.error for c in done] == [None], f"{label}: a valid answer did not complete"
        conn.close(None)  # whatever is left in flight completes now, once

    run()


@settings(
    max_examples=60,
    deadline=None,
    phases=[Phase.explicit, Phase.reuse, Phase.generate],
    suppress_health_check=[HealthCheck.too_slow],
)
@given(
    first=st.sampled_from(API_KEYS),
    second=st.sampled_from(API_KEYS),
    data=st.data(),
    seed=st.integers(0, 2**32 - 1),
)
def test_pipelined_answers_in_any_chunking_complete_in_order(
    first: int, second: int, data: st.DataObject, seed: int
) -> None:
    """Two valid answers in one byte stream, split anywhere: both delivered, in order
    (the frame reader's part of issue 10, item 1)."""
    rnd = random.Random(seed)
    conn = ready_connection()
    versions = [APIS[k].max_version for k in (first, second)]
    pairs = zip((first, second), versions, strict=True)
    sent = [send(conn, k, v, hid=i + 1) for i, (k, v) in enumerate(pairs)]
    stream = b"".join(
        framing.encode_response(
            data.draw(message_strategy(APIS[k].response_type, v)), version=v, correlation_id=c
        )
        for (k, v, (_, c)) in zip((first, second), versions, sent, strict=True)
    )
    feed(conn, stream, rnd)
    done = conn.pull_completions()
    assert [c.handle for c in done] == [h for h, _ in sent]
    assert all(c.error is None for c in done), [c.error for c in done]


def test_claimed_sizes_and_counts_allocate_nothing_near_them() -> None:
    """Frames that claim 2**31-1 bytes, bodies that claim ~2**32 elements: the
    peak allocation while feeding them stays tiny."""
    rnd = random.Random(1)
    big_count = b"\0\0\0\0" + b"\xff\xff\xff\xff\x0f" + b"\0" * 8  # MetadataResponse v12+
    tracemalloc.start()
    try:
        for i in range(200):
            conn = ready_connection()
            _, corr = send(conn, 3, 12, hid=1)
            head = struct.pack(">i", corr) + b"\0"  # response header v1
            if i % 2:
                body = head + big_count
                data = struct.pack(">i", len(body)) + body
            else:
                data = struct.pack(">i", 2**31 - 1) + head + rnd.randbytes(64)
            feed(conn, data, rnd)
            assert conn.closed, "an absurd claim must close the connection"
            assert isinstance(conn.close_error, RemoteProtocolError)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < 4 * 1024 * 1024, f"peak {peak} bytes while refusing absurd claims"
