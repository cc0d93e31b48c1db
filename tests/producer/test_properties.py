"""Property tests of the producer core over a scripted broker (no sockets).

Hypothesis draws a workload (records, keys, explicit partitions, flushes)
and a fault script for successive Produce requests: retriable errors,
non-retriable errors, sequence/producer-id errors that force an epoch bump,
replies lost after the write (the connection drops or the request times
out, and the client resends), and stalls (the broker writes, then answers
nothing for a while, often longer than the delivery timeout, which is
shorter than the request timeout in some runs). The pump jumps time to the
core's deadlines. Whatever happens:

- every record is reported exactly once (one BatchCompleted token), and
  within ``delivery_timeout_ms`` of its append (issue 10, fault 2);
- every record reported delivered is in the log; with idempotence exactly
  once, and each partition's log keeps send order;
- the offsets reported are the offsets in the log;
- buffer accounting returns to zero once everything is reported.
"""

from __future__ import annotations

from collections import Counter
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from kafkacore.errors import LocalProtocolError
from kafkacore.producer import BatchCompleted, OperationCompleted
from tests.producer.scripted import boot_producer, drive

FAULTS = st.one_of(
    st.none(),
    st.none(),
    st.none(),
    st.just(("error", 6)),  # NOT_LEADER_OR_FOLLOWER (retriable, refresh metadata)
    st.just(("error", 7)),  # REQUEST_TIMED_OUT (retriable)
    st.just(("error", 19)),  # NOT_ENOUGH_REPLICAS (retriable)
    st.just(("lose",)),  # written, reply lost: resend must not duplicate
    st.just(("error", 87)),  # INVALID_RECORD (not retriable): those records fail
    st.just(("error", 59)),  # UNKNOWN_PRODUCER_ID: epoch bump (KIP-360), then resend
    st.just(("error", 45)),  # OUT_OF_ORDER_SEQUENCE_NUMBER
    st.just(("stall", 0.4)),  # written, every answer late
    st.just(("stall", 2.5)),  # written, answers after the delivery timeout (some runs)
)


@st.composite
def workloads(draw: Any) -> dict[str, Any]:
    n = draw(st.integers(1, 120))
    records = []
    for i in range(n):
        key = draw(st.sampled_from([None, b"a", b"b", b"c", b"dd"]))
        partition = draw(st.sampled_from([None, None, None, 0, 2]))
        records.append((i, key, partition, draw(st.booleans())))  # last: pump after
    many = draw(st.lists(st.tuples(st.integers(1, 40), st.booleans()), max_size=3))
    return {
        "records": records,
        "many": many,
        "faults": draw(st.lists(FAULTS, max_size=40)),
        "idempotent": draw(st.booleans()),
        "acks": draw(st.sampled_from([1, "all"])),
        "batch_size": draw(st.sampled_from([64, 200, 16384])),
        "linger_ms": draw(st.sampled_from([0, 5])),
        "in_flight": draw(st.integers(1, 5)),
        "flush_every": draw(st.sampled_from([0, 7, 30])),
        "seed": draw(st.integers(0, 1000)),
        "max_batch_records": draw(st.sampled_from([None, None, 2, 5])),
        "delivery_timeout_ms": draw(st.sampled_from([120000, 1500, 700])),
    }


@settings(max_examples=150, deadline=None)
@given(workloads())
def test_no_acked_record_lost_none_reported_twice_order_kept(w: dict[str, Any]) -> None:
    idempotent = w["idempotent"] and w["acks"] == "all"
    core, pump, log = boot_producer(
        seed=w["seed"],
        acks=w["acks"],
        enable_idempotence=idempotent,
        batch_size=w["batch_size"],
        linger_ms=w["linger_ms"],
        delivery_timeout_ms=w["delivery_timeout_ms"],
        client={
            "max_in_flight_requests_per_connection": w["in_flight"],
            "request_timeout_ms": 1000,
        },
    )
    # Metadata first, so that each record's clock starts at its append.
    core.client.add_topic("t", now=pump.now)
    drive(pump, log, until=lambda: bool(core.client.cluster.partitions_for_topic("t")))
    start = pump.now
    faults = list(w["faults"])
    log.fault = lambda: faults.pop(0) if faults else None
    log.max_batch_records = w["max_batch_records"]  # bigger ones: MESSAGE_TOO_LARGE, split
    records = w["records"]
    flushes: list[tuple[Any, int]] = []
    many_tokens: dict[Any, list[int]] = {}
    for i, key, partition, pump_after in records:
        core.append(
            "t",
            b"%d" % i,
            key,
            None,
            partition=partition,
            timestamp=1_000 + i,
            token=i,
            now=pump.now,
        )
        if w["flush_every"] and i % w["flush_every"] == 0:
            flushes.append((core.flush(now=pump.now), i))
        if pump_after:
            pump.step()
    # Batch calls: keyed or not, then the per-record ones must still be in order.
    base = len(records)
    for count, keyed in w["many"]:
        payload = [b"%d" % (base + j) for j in range(count)]
        keys = [b"m%d" % (j % 3) for j in range(count)] if keyed else None
        core.append_many("t", payload, keys, timestamp=5, token=("many", base), now=pump.now)
        records = [*records, *[(base + j, None, None, False) for j in range(count)]]
        many_tokens[("many", base)] = list(range(base, base + count))
        base += count
    flush = core.flush(now=pump.now)
    flushes.append((flush, len(records) - 1))

    def reported() -> int:
        return sum(len(e.tokens) for e in pump.events if isinstance(e, BatchCompleted))

    drive(pump, log, until=lambda: reported() >= len(records) and flush.done, rounds=20_000)
    pump.drain()  # a flush may complete inside the call, with nothing left to pump
    # Every record was appended at `start` (appends do not move the clock).
    late = [when - start for when, _ in log.reported]
    assert max(late) <= w["delivery_timeout_ms"] / 1000 + 0.002, "reported after the timeout"
    events = pump.events
    done = [e for e in events if isinstance(e, BatchCompleted)]
    counts = Counter(t for e in done for t in e.tokens)
    many_ok = Counter(t for e in done if e.error is None for t in e.tokens if t in many_tokens)
    for token, members in many_tokens.items():
        # A batch call's token is reported once per record it carried.
        assert counts.pop(token) == len(members)
    single: list[int] = [r[0] for r in records if not any(r[0] in m for m in many_tokens.values())]
    assert sorted(int(t) for t in counts) == single  # type: ignore[call-overload]
    assert set(counts.values()) <= {1}, "a record was reported twice"
    assert any(isinstance(e, OperationCompleted) and e.handle is flush for e in events)
    assert core._acc.used == 0  # every charge against buffer_memory was given back
    # A flush completes only after every record appended before it was reported.
    seen: Counter[Any] = Counter()
    for e in events:
        if isinstance(e, BatchCompleted):
            seen.update(e.tokens)
        elif isinstance(e, OperationCompleted):
            last = next(i for h, i in flushes if h is e.handle)
            missing = [i for i in range(last + 1) if i in single and not seen[i]]
            missing += [t for t, m in many_tokens.items() if m[-1] <= last and seen[t] < len(m)]
            assert not missing, f"flush after record {last} completed early"
    for token, members in many_tokens.items():
        if many_ok[token] == len(members):
            in_log = [int(v or b"") for entries in log.logs.values() for _, v in entries]
            for i in members:
                assert i in in_log, f"batch-call record {i} acked but not in the log"

    delivered: dict[int, tuple[int, int]] = {}
    for e in done:
        if e.error is None:
            for j, t in enumerate(e.tokens):
                if t in many_tokens:
                    continue
                assert isinstance(t, int)
                delivered[t] = (e.partition, e.base_offset + j if e.base_offset >= 0 else -1)
        else:
            assert not isinstance(e.error, LocalProtocolError), e.error
    for (_topic, p), entries in log.logs.items():
        values = [int(v or b"") for _, v in entries]
        if idempotent:
            ours = [v for v in values if v in set(single)]
            assert len(values) == len(set(values)), f"duplicate in partition {p}"
            assert ours == sorted(ours), f"partition {p} out of order"
        for i in delivered:
            if delivered[i][0] == p:
                assert i in values, f"record {i} acked but not in the log"
                offset = delivered[i][1]
                if offset >= 0:
                    assert values[offset] == i
    for i, _key, partition, _ in records:
        if partition is not None and i in delivered:
            assert delivered[i][0] == partition


def test_epoch_bump_after_a_failed_sequenced_batch() -> None:
    # A non-retriable failure leaves a sequence gap: KIP-360 bumps the epoch
    # and later batches start again at sequence 0 under the new epoch.
    core, pump, log = boot_producer(partitions=1, batch_size=64, linger_ms=0)
    faults: list[Any] = [None, ("error", 87)]
    log.fault = lambda: faults.pop(0) if faults else None
    for i in range(6):
        core.append("t", b"%d" % i, None, None, timestamp=1, token=i, now=pump.now)
        pump.step()
    flush = core.flush(now=pump.now)
    pump.run(until=lambda: flush.done, rounds=5000)
    _pid, epoch = core.producer_id
    assert epoch >= 1
    failed = [t for e in pump.events if isinstance(e, BatchCompleted) and e.error for t in e.tokens]
    assert failed
    values = [int(v or b"") for _, v in log.logs[("t", 0)]]
    assert not set(values) & set(failed)
    assert values == sorted(values)


def test_bump_after_an_unanswered_attempt_fails_that_batch_instead_of_duplicating() -> None:
    # Request 2 is written but never answered (the connection is then torn
    # down); its retry meets UNKNOWN_PRODUCER_ID, which bumps the epoch. The
    # batch may be in the log already, so it must not be resent under the
    # new epoch (the broker could not drop the duplicate): it fails instead.
    core, pump, log = boot_producer(
        partitions=1, batch_size=64, linger_ms=0, client={"request_timeout_ms": 1000}
    )
    # Requests 3-5 are pipelined behind the lost one and dropped with the
    # connection; request 6 is the first retry.
    faults: list[Any] = [None, ("lose",), None, None, None, ("error", 59)]
    log.fault = lambda: faults.pop(0) if faults else None
    for i in range(10):
        core.append("t", b"%d" % i, None, None, timestamp=1, token=i, now=pump.now)
        pump.step()
    flush = core.flush(now=pump.now)
    pump.run(until=lambda: flush.done, rounds=5000)
    assert core.producer_id[1] >= 1  # bumped
    events = [e for e in pump.events if isinstance(e, BatchCompleted)]
    failed = {t for e in events if e.error is not None for t in e.tokens}
    ok = {t for e in events if e.error is None for t in e.tokens}
    assert failed and not failed & ok and failed | ok == set(range(10))
    assert all("not resent" in str(e.error) for e in events if e.error is not None)
    # ... and says why the attempt got no answer (issue 10, fault 4).
    assert all(e.error.__cause__ is not None for e in events if e.error is not None)
    values = [int(v or b"") for _, v in log.logs[("t", 0)]]
    assert len(values) == len(set(values))  # no duplicate, whatever was lost
    assert ok <= set(values)
