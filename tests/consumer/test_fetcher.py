"""Fetcher alone: one Fetch per leader on the fetch lane, sessions, the
buffer bound, backoffs, and every kind of answer per partition."""

from __future__ import annotations

import uuid
from typing import Any

import pytest

from kafkacore.client.routing import Node
from kafkacore.consumer.buffer import FetchBuffer
from kafkacore.consumer.config import ConsumerConfig
from kafkacore.consumer.events import (
    OffsetAndMetadata,
    RecordsAvailable,
    TruncationDetected,
)
from kafkacore.consumer.fetcher import FETCH_LANE, Fetcher, NodeBackoff
from kafkacore.consumer.positions import FetchState
from kafkacore.errors import KafkaConnectionError
from kafkacore.protocol import messages as m
from kafkacore.protocol.enums import ErrorCode
from kafkacore.protocol.error_codes import TopicAuthorizationFailedError
from kafkacore.protocol.messages.fetch_response import (
    AbortedTransaction,
    EpochEndOffset,
    FetchableTopicResponse,
    PartitionData,
)
from kafkacore.records import RecordBatchBuilder
from tests.consumer.units import T0, T1, U0, World, metadata, world


def records(start: int, count: int) -> bytes:
    b = RecordBatchBuilder(base_offset=start, partition_leader_epoch=2)
    for i in range(count):
        b.append(b"v%d" % (start + i), timestamp=1000)
    return b.build()


def setup(
    *, answer: Any = None, policy: str = "earliest", **cfg: Any
) -> tuple[World, Fetcher, FetchBuffer]:
    w = world(answer=answer, auto_offset_reset=policy)
    config = ConsumerConfig(group_id="g", auto_offset_reset=policy, **cfg)
    buffer = FetchBuffer(config.fetch_buffer_bytes)
    w.subs._invalidate = buffer.drop  # as the facade wires it
    fetcher = Fetcher(
        config,
        subs=w.subs,
        buffer=buffer,
        topics=w.topics,
        send=w.send,
        deadlines=w.deadlines,
        errors=w.errors,
        emit=w.events.append,
        request_timeout_ms=30000,
    )
    return w, fetcher, buffer


def at(w: World, **positions: int) -> None:
    tps = {T0: "t0", T1: "t1", U0: "u0"}
    chosen = {tp: positions[name] for tp, name in tps.items() if name in positions}
    w.subs.assign(frozenset(chosen))
    for tp, offset in chosen.items():
        w.subs.committed_found(tp, OffsetAndMetadata(offset), 0)


def data(partition: int, *, code: int = 0, **kw: Any) -> PartitionData:
    kw.setdefault("high_watermark", 10)
    return PartitionData(partition_index=partition, error_code=code, **kw)


def response(*parts: tuple[str, PartitionData], session_id: int = 0, code: int = 0) -> Any:
    by_topic: dict[str, list[PartitionData]] = {}
    for topic, pd in parts:
        by_topic.setdefault(topic, []).append(pd)
    return m.FetchResponse(
        error_code=code,
        session_id=session_id,
        responses=[FetchableTopicResponse(topic=t, partitions=ps) for t, ps in by_topic.items()],
    )


def fetched(req: Any) -> dict[str, list[int]]:
    return {t.topic: sorted(p.partition for p in t.partitions) for t in req.topics}


def test_one_fetch_per_leader_on_the_fetch_lane() -> None:
    answer = metadata({"t": 2, "u": 1}, leaders={T1: 1})
    w, fetcher, _ = setup(answer=answer, fetch_max_wait_ms=250, max_partition_fetch_bytes=77)
    at(w, t0=3, t1=4, u0=0)
    assert fetcher.send_fetches(0.0)
    by_node = {s.target: s for s in w.send.sent}
    assert set(by_node) == {Node(0), Node(1)}
    assert fetched(by_node[Node(0)].request) == {"t": [0], "u": [0]}
    assert fetched(by_node[Node(1)].request) == {"t": [1]}
    sent = by_node[Node(1)]
    assert sent.lane == FETCH_LANE and sent.timeout_ms == 30250
    part = sent.request.topics[0].partitions[0]
    assert (part.fetch_offset, part.partition_max_bytes, part.current_leader_epoch) == (4, 77, 0)
    assert sent.request.topics[0].topic_id == uuid.UUID(int=1)
    assert not fetcher.send_fetches(0.0), "fetched again while a fetch was in flight"


def test_nothing_is_fetched_at_the_buffer_bound() -> None:
    w, fetcher, buffer = setup(fetch_buffer_bytes=1)
    at(w, t0=0, t1=0)
    fetcher.send_fetches(0.0)
    w.send.pop().answer(response(("t", data(0, records=records(0, 2)))))
    assert buffer.full
    assert not fetcher.send_fetches(0.0) and not w.send.sent


def test_records_go_to_the_buffer_and_are_announced_once() -> None:
    w, fetcher, buffer = setup()
    at(w, t0=0, t1=5)
    fetcher.send_fetches(0.0)
    w.send.pop().answer(
        response(
            ("t", data(0, records=records(0, 2), last_stable_offset=8, log_start_offset=0)),
            ("t", data(1, records=records(5, 1), last_stable_offset=-1, log_start_offset=-1)),
        )
    )
    assert buffer.holds(T0) and buffer.holds(T1)
    assert w.events == [RecordsAvailable()]
    st = w.subs.parts[T0]
    assert (st.high_watermark, st.last_stable_offset, st.log_start_offset) == (10, 8, 0)
    assert w.subs.parts[T1].last_stable_offset is None
    assert not fetcher.send_fetches(0.0), "a partition with buffered data was fetched again"
    w.subs.seek(T0, 2)  # drops t-0's data: fetchable again
    assert fetcher.send_fetches(0.0)
    w.send.pop().answer(response(("t", data(0, records=records(2, 1)))))
    assert w.events == [RecordsAvailable()], "announced although the buffer was not empty"


def test_sessions_go_incremental_and_forget_paused_partitions() -> None:
    w, fetcher, _ = setup()
    at(w, t0=0, t1=0)
    fetcher.send_fetches(0.0)
    first = w.send.pop()
    assert (first.request.session_id, first.request.session_epoch) == (0, 0)
    first.answer(response(session_id=55))
    w.subs.pause(T1)
    fetcher.send_fetches(0.0)
    second = w.send.pop().request
    assert (second.session_id, second.session_epoch) == (55, 1)
    assert fetched(second) == {}  # t-0 unchanged: not named again
    assert [(t.topic, t.partitions) for t in second.forgotten_topics_data] == [("t", [1])]


def test_a_session_error_falls_back_to_a_full_fetch_at_once() -> None:
    w, fetcher, _ = setup()
    at(w, t0=0)
    fetcher.send_fetches(0.0)
    w.send.pop().answer(response(session_id=55))
    fetcher.send_fetches(0.0)
    w.send.pop().answer(response(code=ErrorCode.FETCH_SESSION_ID_NOT_FOUND))
    assert NodeBackoff(0) not in w.deadlines
    fetcher.send_fetches(0.0)
    again = w.send.pop().request
    assert (again.session_id, again.session_epoch, fetched(again)) == (0, 0, {"t": [0]})


def test_other_top_level_errors_back_the_leader_off() -> None:
    w, fetcher, _ = setup(retry_backoff_ms=200)
    at(w, t0=0)
    fetcher.send_fetches(0.0)
    w.send.pop().answer(response(code=ErrorCode.UNKNOWN_SERVER_ERROR))
    assert w.deadlines.get(NodeBackoff(0)) == pytest.approx(0.2)
    assert not fetcher.send_fetches(0.1)
    assert fetcher.send_fetches(0.2)
    assert NodeBackoff(0) not in w.deadlines


def test_a_failed_request_resets_the_session_and_refreshes_metadata() -> None:
    w, fetcher, _ = setup()
    at(w, t0=0)
    fetcher.send_fetches(0.0)
    w.send.pop().answer(response(session_id=55))
    fetcher.send_fetches(0.0)
    w.send.pop().fail(KafkaConnectionError("lost"))
    assert w.client.refreshes == 1 and NodeBackoff(0) in w.deadlines
    assert fetcher.sessions[0].session_id == 0
    assert fetcher.send_fetches(1.0)
    assert w.send.pop().request.session_id == 0


def test_out_of_range_resets_by_the_policy() -> None:
    w, fetcher, _ = setup(policy="none")
    at(w, t0=5)
    fetcher.send_fetches(0.0)
    w.send.pop().answer(response(("t", data(0, code=ErrorCode.OFFSET_OUT_OF_RANGE))))
    assert w.subs.parts[T0].state is FetchState.AWAIT_RESET
    assert w.subs.awaiting_seek() == [T0]  # every poll raises until seek()


@pytest.mark.parametrize(
    ("code", "session_kept"),
    [(ErrorCode.NOT_LEADER_OR_FOLLOWER, True), (ErrorCode.FENCED_LEADER_EPOCH, False)],
)
def test_a_moved_leader_refreshes_metadata_and_backs_off(code: int, session_kept: bool) -> None:
    w, fetcher, _ = setup()
    at(w, t0=5)
    fetcher.send_fetches(0.0)
    w.send.pop().answer(response(session_id=55))
    fetcher.send_fetches(0.0)
    w.send.pop().answer(response(("t", data(0, code=code)), session_id=55))
    assert w.client.refreshes == 1 and NodeBackoff(0) in w.deadlines
    assert (fetcher.sessions[0].session_id == 55) is session_kept


def test_a_non_retriable_partition_error_is_raised_by_the_next_poll() -> None:
    w, fetcher, _ = setup()
    at(w, t0=5, t1=5)
    fetcher.send_fetches(0.0)
    w.send.pop().answer(
        response(
            ("t", data(0, code=ErrorCode.TOPIC_AUTHORIZATION_FAILED)),
            ("t", data(1, code=ErrorCode.CORRUPT_MESSAGE)),  # retriable: fetched again
        )
    )
    assert isinstance(w.errors.pending, TopicAuthorizationFailedError)
    assert NodeBackoff(0) not in w.deadlines


def test_a_diverging_epoch_truncates_the_position() -> None:
    w, fetcher, _ = setup()
    at(w, t0=9, t1=9)
    fetcher.send_fetches(0.0)
    w.send.pop().answer(
        response(
            ("t", data(0, diverging_epoch=EpochEndOffset(epoch=1, end_offset=6))),
            ("t", data(1, diverging_epoch=EpochEndOffset(epoch=-1, end_offset=-1))),
        )
    )
    assert w.subs.parts[T0].position == 6
    assert TruncationDetected(partition=T0, old_position=9, offset=6) in w.events
    assert w.subs.parts[T1].position == 9  # no divergence given: nothing moves


def test_stale_and_unknown_answers_are_ignored() -> None:
    w, fetcher, buffer = setup()
    at(w, t0=0, t1=0)
    fetcher.send_fetches(0.0)
    sent = w.send.pop()
    w.subs.seek(T0, 1)  # moved while the fetch was out
    w.subs.remove(T1)  # revoked
    unknown = FetchableTopicResponse(
        topic="", topic_id=uuid.UUID(int=99), partitions=[data(0, records=records(0, 1))]
    )
    resp = response(("t", data(0, records=records(0, 1))), ("t", data(1, records=records(0, 1))))
    resp.responses.append(unknown)
    resp.responses.append(
        FetchableTopicResponse(topic="u", partitions=[data(0, records=records(0, 1))])
    )
    sent.answer(resp)
    assert len(buffer) == 0 and w.events == []
    assert w.client.refreshes == 1  # a topic id metadata does not know


def test_a_topic_named_by_id_is_found_through_metadata() -> None:
    w, fetcher, buffer = setup()
    at(w, t0=0)
    fetcher.send_fetches(0.0)
    resp = m.FetchResponse(
        responses=[
            FetchableTopicResponse(
                topic="", topic_id=uuid.UUID(int=1), partitions=[data(0, records=records(0, 1))]
            )
        ]
    )
    w.send.pop().answer(resp)
    assert buffer.holds(T0)


def test_read_committed_passes_the_aborted_transactions_on() -> None:
    w, fetcher, buffer = setup(isolation_level="read_committed")
    at(w, t0=0)
    fetcher.send_fetches(0.0)
    req = w.send.sent[0].request
    assert req.isolation_level == 1
    aborted = [AbortedTransaction(producer_id=7, first_offset=0)]
    w.send.pop().answer(
        response(("t", data(0, records=records(0, 1), aborted_transactions=aborted)))
    )
    assert list(buffer._fetches[0]._aborted) == [(7, 0)]


def test_partitions_without_a_leader_ask_for_metadata() -> None:
    w, fetcher, _ = setup(answer=metadata({"t": 2}, leaders={T1: -1}))
    at(w, t0=0, t1=0)
    assert fetcher.send_fetches(0.0)
    assert fetched(w.send.pop().request) == {"t": [0]}
    assert w.client.topics == frozenset({"t"})
    assert w.client.refreshes == 1


def test_a_leader_without_broker_metadata_waits_for_metadata() -> None:
    # Leader 2 is not among the brokers: no connection can be made to it yet.
    w, fetcher, _ = setup(answer=metadata({"t": 1}, leaders={T0: 2}))
    at(w, t0=0)
    assert not fetcher.send_fetches(10_000.0)  # metadata is stale by now: no extra ask
    assert w.client.refreshes == 0
    assert fetcher.send_fetches(0.0) is False and w.client.refreshes == 1
