"""ConsumerCore over random command orders against the fake broker (hypothesis):
polls of random sizes (per record and batches), pauses, resumes, seeks,
appends to the log and time jumps. Invariant: what a poll hands out for a
partition starts exactly at the position before the poll and is gapless,
and the position afterwards is one past the last record handed out; a
paused partition hands out nothing."""

from __future__ import annotations

from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from kafkacore.client.metadata import TopicPartition
from kafkacore.records import Compression
from tests.client.fakebroker import Topic
from tests.consumer.fake import boot_consumer

TPS = [TopicPartition("t", 0), TopicPartition("t", 1)]

steps = st.lists(
    st.one_of(
        st.tuples(st.just("poll"), st.integers(1, 7), st.booleans()),
        st.tuples(st.just("pump"), st.integers(1, 6), st.booleans()),
        st.tuples(st.just("poll"), st.integers(1, 7), st.booleans()),
        st.tuples(st.just("pump"), st.integers(1, 6), st.booleans()),
        st.tuples(st.just("pause"), st.integers(0, 1), st.booleans()),
        st.tuples(st.just("resume"), st.integers(0, 1), st.booleans()),
        st.tuples(st.just("seek"), st.integers(0, 1), st.integers(0, 30)),
        st.tuples(st.just("append"), st.integers(0, 1), st.integers(1, 6)),
        st.tuples(st.just("tick"), st.integers(0, 1), st.booleans()),
    ),
    max_size=40,
)


@settings(max_examples=250, deadline=None)
@given(script=steps, compressed=st.booleans())
def test_positions_follow_what_is_handed_out(
    script: list[tuple[Any, ...]], compressed: bool
) -> None:
    # Ticks jump time without letting the broker answer; a day of API timeout
    # keeps the unreachable-cluster report (raised by poll) out of this test.
    core, pump, kafka, _ = boot_consumer(
        [Topic("t", 2)], auto_offset_reset="earliest", default_api_timeout_ms=86_400_000
    )
    codec = {"compression": Compression.LZ4} if compressed else {}
    for tp in TPS:
        kafka.log(tp.topic, tp.partition).append([b"%d" % i for i in range(5)], **codec)
    core.assign(TPS, now=pump.now)
    pump.run(until=lambda: all(core.position(tp) is not None for tp in TPS))
    for step in script:
        kind = step[0]
        if kind == "poll":
            before = {tp: core.position(tp) for tp in TPS}
            paused = core.paused()
            if step[2]:
                batches = core.poll_batches(step[1], now=pump.now)
                got = [
                    (TopicPartition(b.topic, b.partition), o) for b in batches for o in b.offsets
                ]
            else:
                records = core.poll_records(step[1], now=pump.now)
                got = [(TopicPartition(r.topic, r.partition), r.offset) for r in records]
            assert len(got) <= step[1]
            for tp in TPS:
                offsets = [o for t, o in got if t == tp]
                if tp in paused:
                    assert not offsets, f"{tp} is paused but handed out {offsets}"
                if offsets:
                    start = before[tp]
                    assert start is not None, f"{tp} handed out records without a position"
                    assert offsets == list(range(start, start + len(offsets))), (tp, start, offsets)
                    assert core.position(tp) == offsets[-1] + 1
        elif kind == "pump":
            for _ in range(step[1]):
                pump.step()
        elif kind == "pause":
            core.pause([TPS[step[1]]], now=pump.now)
        elif kind == "resume":
            core.resume([TPS[step[1]]], now=pump.now)
        elif kind == "seek":
            tp = TPS[step[1]]
            end = kafka.log(tp.topic, tp.partition).end
            core.seek(tp, min(step[2], end), now=pump.now)
            assert core.position(tp) == min(step[2], end)
        elif kind == "append":
            tp = TPS[step[1]]
            kafka.log(tp.topic, tp.partition).append([b"x"] * step[2], **codec)
        elif kind == "tick":
            deadline = core.next_deadline()
            if deadline is not None:
                pump.now = max(pump.now, deadline)
                core.handle_timeout(now=pump.now)
                pump.drain()
        assert core.buffered_bytes >= 0
