"""Property tests of the share machines against the scripted broker (KIP-932).

Random programs of produce / poll-and-acknowledge / time jumps / commits run
a share consumer in explicit mode. Invariants:

- the broker never sees an acknowledgement for a record the member does not
  hold in that delivery, and never an accept of an accepted record
  (``ShareKafka.violations``);
- a record comes back only with a higher delivery count, and a rejected
  record never comes back;
- after the program, draining (accepting everything) leaves every record
  accepted exactly once, or archived (rejected or out of deliveries).
"""

from __future__ import annotations

from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from kafkacore.client.metadata import TopicPartition
from kafkacore.share import AcknowledgeType
from tests.share.scripted import St, boot_share

ACK = st.sampled_from([AcknowledgeType.ACCEPT, AcknowledgeType.RELEASE, AcknowledgeType.REJECT])
STEP = st.one_of(
    st.tuples(st.just("produce"), st.integers(0, 2), st.integers(1, 6)),
    st.tuples(st.just("poll"), st.lists(ACK, min_size=1, max_size=4), st.integers(1, 7)),
    st.tuples(st.just("hold"), st.integers(1, 7)),
    st.tuples(st.just("commit")),
    st.tuples(st.just("jump"), st.floats(0.1, 40.0)),
)


class Watch:
    """What the client handed out, per offset: delivery counts and the last ack."""

    def __init__(self) -> None:
        self.counts: dict[tuple[str, int, int], int] = {}
        self.rejected: set[tuple[str, int, int]] = set()

    def saw(self, rec: Any) -> None:
        key = (rec.topic, rec.partition, rec.offset)
        assert key not in self.rejected, f"{key} came back after it was rejected"
        before = self.counts.get(key, 0)
        assert rec.delivery_count > before, f"{key}: delivery {rec.delivery_count} after {before}"
        self.counts[key] = rec.delivery_count


def _poll(core: Any, pump: Any, watch: Watch, limit: int) -> list[Any]:
    core.poll_records(0, now=pump.now)  # asks for records, hands none out
    pump.run(rounds=50)
    recs = core.poll_records(limit, now=pump.now)
    for rec in recs:
        watch.saw(rec)
    return list(recs)


def _run(program: list[tuple[Any, ...]], seed: int) -> None:
    core, pump, kafka = boot_share(3, n=2, seed=seed, acknowledgement_mode="explicit")
    watch = Watch()
    for step in program:
        kind = step[0]
        if kind == "produce":
            kafka.produce("t", step[1], [b"%d" % i for i in range(step[2])])
        elif kind in ("poll", "hold"):
            recs = _poll(core, pump, watch, step[-1])
            if kind == "hold":  # hold past the lock, then acknowledge: the acks are dropped
                pump.now += kafka.lock_ms / 1000 + 1
                pump.core.handle_timeout(now=pump.now)
            for i, rec in enumerate(recs):
                kind_ = step[1][i % len(step[1])] if kind == "poll" else AcknowledgeType.ACCEPT
                core.acknowledge(rec, kind_, now=pump.now)
                if kind_ is AcknowledgeType.REJECT and kind == "poll":
                    watch.rejected.add((rec.topic, rec.partition, rec.offset))
            pump.run(rounds=50)
        elif kind == "commit":
            op = core.commit(now=pump.now)
            pump.run(until=lambda op=op: op.done, rounds=100)
        else:
            pump.now += step[1]
            core.handle_timeout(now=pump.now)
            pump.run(rounds=50)
        assert kafka.violations == []
    _drain(core, pump, kafka, watch)


def _drain(core: Any, pump: Any, kafka: Any, watch: Watch) -> None:
    for _ in range(200):
        recs = _poll(core, pump, watch, 100)
        for rec in recs:
            core.acknowledge(rec, AcknowledgeType.ACCEPT, now=pump.now)
        op = core.commit(now=pump.now)
        pump.run(until=lambda op=op: op.done, rounds=100)
        left = [r for log in kafka.logs.values() for r in log if r.state is not St.ACKNOWLEDGED]
        if all(r.state is St.ARCHIVED for r in left):
            break
        pump.now += kafka.lock_ms / 1000 + 1  # whatever is still locked comes back
        core.handle_timeout(now=pump.now)
    assert kafka.violations == []
    for (topic, p), log in kafka.logs.items():
        for offset, r in enumerate(log):
            assert r.state in (St.ACKNOWLEDGED, St.ARCHIVED), (topic, p, offset, r)
            accepted = kafka.accepted.get((topic, p, offset), 0)
            assert accepted == (1 if r.state is St.ACKNOWLEDGED else 0)
            if (topic, p, offset) in watch.rejected:
                assert r.state is St.ARCHIVED
    assert not core.member.error
    assert core.assignment() == {TopicPartition("t", p) for p in range(3)}


@settings(max_examples=150, deadline=None)
@given(program=st.lists(STEP, max_size=25), seed=st.integers(0, 1000))
def test_share_consumer_keeps_the_acknowledgement_invariants(
    program: list[tuple[Any, ...]], seed: int
) -> None:
    _run(program, seed)
