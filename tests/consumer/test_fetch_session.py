"""KIP-227 fetch sessions over random rounds (hypothesis): what the broker's
session cache holds, rebuilt only from the requests, always equals what the
client wanted in that round; errors and lost answers fall back to a full
fetch; epochs count up from 1 and wrap to 1."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from kafkacore.client.metadata import TopicPartition
from kafkacore.consumer.fetch_session import FetchSession, PartitionFetch, SessionState

TPS = [TopicPartition("t", p) for p in range(5)]

wanted_maps = st.dictionaries(
    st.sampled_from(TPS),
    st.builds(PartitionFetch, st.integers(0, 3), st.just(0), st.just(-1), st.just(100)),
)
outcome = st.sampled_from(["ok", "ok", "ok", "lost", "not_found", "bad_epoch", "no_session"])


@settings(max_examples=200, deadline=None)
@given(rounds=st.lists(st.tuples(wanted_maps, outcome), max_size=40))
def test_broker_cache_always_equals_the_wanted_set(
    rounds: list[tuple[dict[TopicPartition, PartitionFetch], str]],
) -> None:
    s = FetchSession(node_id=1)
    broker: dict[int, tuple[int, dict[TopicPartition, PartitionFetch]]] = {}  # id -> (epoch, cache)
    next_id = 7
    for wanted, result in rounds:
        session_id, epoch, to_send, forgotten = s.build(wanted)
        if result == "lost":
            s.reset()  # what the consumer does on a transport error
            continue
        if session_id == 0:
            assert epoch == 0 and to_send == wanted and not forgotten, "full fetch expected"
            if result == "no_session":
                s.on_response(0, 0)
                assert s.state is SessionState.NONE
                continue
            next_id += 1
            broker[next_id] = (1, dict(wanted))
            s.on_response(0, next_id)
            assert s.state is SessionState.OPEN and s.epoch == 1
            continue
        if result in ("not_found", "bad_epoch"):
            broker.pop(session_id, None)
            s.on_response(70 if result == "not_found" else 71, 0)
            assert s.state is SessionState.NONE, "a session error must fall back to full"
            continue
        b_epoch, cache = broker[session_id]
        assert epoch == b_epoch, "the client's epoch drifted from the broker's"
        for tp in forgotten:
            cache.pop(tp, None)
        cache.update(to_send)
        assert cache == wanted, "the incremental request did not rebuild the wanted set"
        broker[session_id] = (b_epoch + 1, cache)
        s.on_response(0, session_id)
        assert s.epoch == b_epoch + 1


def test_epoch_wraps_to_one() -> None:
    s = FetchSession(node_id=1)
    s.build({})
    s.on_response(0, 5)
    s.epoch = 2**31 - 1
    s.build({})
    s.on_response(0, 5)
    assert s.epoch == 1
