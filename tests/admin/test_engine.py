"""The admin job engine: retries, backoff, deadlines, exactly-once completion.

Driven through real commands against the scripted cluster of
tests/admin/fakeadmin.py; time jumps to the machine's deadlines.
"""

from __future__ import annotations

import itertools
import random
import uuid
from typing import Any

import pytest

from kafkacore.admin import AdminConfig, AdminCore, NewTopic
from kafkacore.admin._base import Job, items_outcome, retriable
from kafkacore.admin.results import ItemResult
from kafkacore.client.backoff import ExponentialBackoff
from kafkacore.client.config import ClientConfig
from kafkacore.client.core import KafkaClientCore
from kafkacore.client.events import MetadataUpdated
from kafkacore.client.routing import Node
from kafkacore.errors import (
    AuthenticationError,
    DecodeError,
    KafkaConnectionError,
    KafkaTimeoutError,
    LocalProtocolError,
    NoBrokersAvailable,
    NoCommonVersionError,
    RemoteProtocolError,
    RequestCancelled,
)
from kafkacore.operation import Operation
from kafkacore.protocol import messages as m
from kafkacore.protocol.enums import ApiKey, ErrorCode
from kafkacore.protocol.error_codes import (
    CoordinatorNotAvailableError,
    NotControllerError,
    TopicAlreadyExistsError,
)
from kafkacore.protocol.messages import create_topics_response as ct
from kafkacore.protocol.messages import delete_topics_response as dt
from tests.admin.fakeadmin import Harness
from tests.client.fakebroker import FakeBroker

# ------------------------------------------------------------ decisions


@pytest.mark.parametrize(
    ("error", "again"),
    [
        (KafkaTimeoutError("request timed out"), True),
        (KafkaConnectionError("lost"), True),
        (NoBrokersAvailable("nobody"), True),
        (NotControllerError(), True),
        (CoordinatorNotAvailableError(), True),
        (TopicAlreadyExistsError(), False),
        (AuthenticationError("refused"), False),
        (RequestCancelled("closed"), False),
        (NoCommonVersionError("too old"), False),
        (LocalProtocolError("queue full"), False),
        (DecodeError("garbage"), False),
        (RemoteProtocolError("bad"), False),
        (ValueError("other"), False),
    ],
)
def test_retriable_request_failures(error: BaseException, again: bool) -> None:
    assert retriable(error) is again


def test_one_wide_error_fails_the_operation_item_errors_do_not() -> None:
    wide = KafkaTimeoutError("no answer")
    job = Job(Operation(1, "x"), ["a", "b"], deadline=1.0, timeout_ms=1000, finish=items_outcome)
    job.wide_errors.append(wide)
    job.settle("a", error=wide)
    job.settle("b", error=wide)
    assert items_outcome(job) == (None, wide)
    own = TopicAlreadyExistsError("a")
    job = Job(Operation(2, "x"), ["a"], deadline=1.0, timeout_ms=1000, finish=items_outcome)
    job.settle("a", error=own)
    job.settle("a", 5)  # the first outcome stands
    value, error = items_outcome(job)
    assert error is None and value["a"] == ItemResult(None, own)
    assert "0/1" not in repr(job) and "1/1 settled" in repr(job)


# ------------------------------------------------------------ retries


def _times(h: Harness, api: int) -> list[float]:
    """Record the time of each request of ``api`` (the default answer follows)."""
    seen: list[float] = []

    def note(b: FakeBroker, body: Any, v: int) -> None:
        seen.append(h.now)

    h.world.script(api, *[note] * 50)
    return seen


def _not_controller(b: FakeBroker, body: Any, v: int) -> Any:
    return m.CreateTopicsResponse(
        topics=[
            ct.CreatableTopicResult(name=t.name, error_code=ErrorCode.NOT_CONTROLLER)
            for t in body.topics
        ]
    )


def test_a_refused_item_is_sent_again_after_a_jittered_exponential_backoff() -> None:
    h = Harness(retry_backoff_ms=100, retry_backoff_max_ms=1000)
    times: list[float] = []

    def refuse(b: FakeBroker, body: Any, v: int) -> Any:
        times.append(h.now)
        return _not_controller(b, body, v)

    def accept(b: FakeBroker, body: Any, v: int) -> None:
        times.append(h.now)

    h.world.script(ApiKey.CREATE_TOPICS, refuse, refuse, refuse, accept)
    op = h.core.create_topics([NewTopic("t")], now=h.now)
    assert h.result(op)["t"].ok
    backoff = ExponentialBackoff(100, 1000)
    for attempt, (before, after) in enumerate(itertools.pairwise(times), start=1):
        low, high = backoff.bounds_ms(attempt)
        assert low / 1000 <= after - before <= high / 1000
    assert len(times) == 4 and h.completions(op) == 1


def test_not_controller_refreshes_the_metadata_before_the_retry() -> None:
    h = Harness()
    h.world.script(ApiKey.CREATE_TOPICS, _not_controller)
    before = h.core.client.cluster.update_count
    op = h.core.create_topics([NewTopic("t")], now=h.now)
    assert h.result(op)["t"].ok
    assert h.core.client.cluster.update_count > before


def test_retries_stop_at_the_deadline_with_the_last_error_as_cause() -> None:
    h = Harness(api_timeout_ms=2000)
    h.world.script(ApiKey.CREATE_TOPICS, *[_not_controller] * 100)
    op = h.core.create_topics([NewTopic("t"), NewTopic("u")], now=0.0)
    h.run(op)
    assert isinstance(op.error, KafkaTimeoutError)  # one error took both items down
    assert "create_topics: not done within 2000 ms" in str(op.error)
    assert isinstance(op.error.__cause__, NotControllerError)
    assert h.now <= 2.0 and h.core.pending_operations == 0


def test_a_lost_connection_is_retried_on_a_new_one() -> None:
    h = Harness()
    h.result(h.core.describe_cluster(now=h.now))  # connections up
    broker = next(iter(h.pump.brokers.values()))
    broker.hold = True
    op = h.core.describe_cluster(now=h.now)
    h.pump.run(until=lambda: len(h.world.requests(ApiKey.DESCRIBE_CLUSTER)) == 2)
    h.pump.lose_cluster()
    h.pump.refuse = set()
    broker.hold = False
    h.pump.held.clear()
    assert h.result(op).cluster_id == "fake-cluster"
    assert len(h.world.requests(ApiKey.DESCRIBE_CLUSTER)) == 3


def test_a_request_timeout_is_retried_and_the_late_answer_ignored() -> None:
    h = Harness(request_timeout_ms=1000)
    h.result(h.core.describe_cluster(now=h.now))  # connections up
    broker = next(iter(h.pump.brokers.values()))
    broker.hold = True
    op = h.core.describe_cluster(now=h.now)
    h.pump.run(until=lambda: h.core.client.in_flight_request_count() == 0 and h.now >= 1.0)
    broker.hold = False
    h.pump.release()
    assert h.result(op).controller_id == 0
    assert h.completions(op) == 1
    assert len(h.world.requests(ApiKey.DESCRIBE_CLUSTER)) == 3  # warm-up, lost, retried


def test_the_deadline_fails_what_is_in_flight_and_cancels_it() -> None:
    h = Harness(api_timeout_ms=500, request_timeout_ms=30000)
    broker = next(iter(h.pump.brokers.values()))
    broker.hold = True
    op = h.core.delete_topics(["a"], now=h.now)
    h.run(op)
    assert isinstance(op.error, KafkaTimeoutError) and op.error.__cause__ is None
    assert "delete_topics: not done within 500 ms" in str(op.error)
    assert h.core.client.in_flight_request_count() == 0  # cancelled
    broker.hold = False
    h.pump.release()
    h.pump.run(rounds=20)
    assert h.completions(op) == 1


def test_an_item_the_answer_leaves_out_fails_as_a_broker_fault() -> None:
    h = Harness()
    h.world.add_topic("a")
    h.world.add_topic("b")

    def only_a(b: FakeBroker, body: Any, v: int) -> Any:
        return m.DeleteTopicsResponse(responses=[dt.DeletableTopicResult(name="a")])

    h.world.script(ApiKey.DELETE_TOPICS, only_a)
    results = h.result(h.core.delete_topics(["a", "b"], now=h.now))
    assert results["a"].ok
    error = results["b"].error
    assert isinstance(error, RemoteProtocolError)
    assert str(error) == "delete_topics: no broker answer mentioned 'b'"


def test_a_request_no_version_can_carry_fails_without_retry() -> None:
    h = Harness(versions={ApiKey.DELETE_TOPICS: (1, 5)})
    op = h.core.delete_topics([uuid.UUID(int=7)], now=h.now)
    h.run(op)
    assert isinstance(op.error, NoCommonVersionError)
    assert "deleting by topic id needs DeleteTopics v6+; the broker offers v5" in str(op.error)
    assert h.world.requests(ApiKey.DELETE_TOPICS) == []


def test_an_unreachable_cluster_fails_at_the_timeout_with_no_brokers_available() -> None:
    h = Harness()
    op_time = h.now
    h.pump.lose_cluster()
    core = AdminCore(
        now=op_time,
        rng=random.Random(1),
        client_config=ClientConfig(bootstrap_servers="127.0.0.1:9999"),
    )
    h.pump.core = core  # type: ignore[assignment]
    op = core.describe_cluster(now=op_time, timeout_ms=5000)
    h.pump.run(until=lambda: op.done, rounds=5000)
    assert isinstance(op.error, NoBrokersAvailable)
    assert "127.0.0.1:9999" in str(op.error) and "not done within 5000 ms" in str(op.error)
    assert isinstance(op.error.__cause__, KafkaConnectionError), repr(op.error.__cause__)
    # At the timeout, less at most one retry backoff (retry_backoff_max_ms, 1 s)
    # that would have started after it: not after a few refused rounds.
    assert 4.0 <= h.pump.now - op_time <= 5.0


# ------------------------------------------------------------ lifecycle


def test_close_fails_pending_commands_and_refuses_new_ones() -> None:
    h = Harness()
    next(iter(h.pump.brokers.values())).hold = True
    op = h.core.list_topics(now=h.now)
    h.core.close(now=h.now)
    assert op.done and isinstance(op.error, RequestCancelled)
    assert "list_topics: the admin client closed" in str(op.error)
    assert h.core.closed and h.core.pending_operations == 0
    h.core.close(now=h.now)  # twice is fine
    with pytest.raises(LocalProtocolError, match="list_topics: the admin client is closed"):
        h.core.list_topics(now=h.now)
    assert sum(1 for e in h.core.pull_events() if getattr(e, "handle", None) is op) == 1


def test_pending_commands_are_bounded() -> None:
    h = Harness()
    core = AdminCore(
        AdminConfig(max_pending_operations=2),
        now=h.now,
        rng=random.Random(0),
        client=KafkaClientCore(
            ClientConfig(bootstrap_servers="127.0.0.1:9092"), now=h.now, rng=random.Random(0)
        ),
    )
    core.list_topics(now=h.now)
    core.list_topics(now=h.now)
    with pytest.raises(LocalProtocolError, match="2 admin commands are already pending"):
        core.list_topics(now=h.now)


def test_a_full_client_queue_fails_the_items_at_once() -> None:
    h = Harness(max_queued_requests=1)
    h.world.add_topic("a")
    # A request for a node nobody knows waits in the queue, filling it.
    h.core.client.send(m.MetadataRequest(topics=[]), now=h.now, target=Node(42))
    op = h.core.describe_topics(["a"], now=h.now)
    assert op.done
    assert isinstance(op.error, LocalProtocolError) and "max_queued_requests=1" in str(op.error)


def test_constructor_checks_its_arguments() -> None:
    with pytest.raises(TypeError, match="config must be an AdminConfig"):
        AdminCore({"x": 1}, now=0.0, rng=random.Random(0))  # type: ignore[arg-type]
    client = KafkaClientCore(now=0.0, rng=random.Random(0))
    with pytest.raises(ValueError, match="give client_config or client, not both"):
        AdminCore(now=0.0, rng=random.Random(0), client=client, client_config=ClientConfig())
    assert AdminCore(now=0.0, rng=random.Random(0), client=client).client is client


def test_client_events_pass_through_to_the_transport() -> None:
    h = Harness()
    assert any(isinstance(e, MetadataUpdated) for e in h.pump.events)


def test_every_command_completes_exactly_once_with_one_event() -> None:
    h = Harness()
    h.world.add_topic("a")
    ops: list[Operation[Any]] = [
        h.core.list_topics(now=h.now),
        h.core.describe_topics(["a", "b"], now=h.now),
        h.core.create_topics([NewTopic("a")], now=h.now),
    ]
    h.pump.run(until=lambda: all(op.done for op in ops))
    h.pump.run(rounds=20)
    assert [h.completions(op) for op in ops] == [1, 1, 1]


def test_close_cancels_scheduled_retries() -> None:
    h = Harness()
    h.world.script(ApiKey.CREATE_TOPICS, _not_controller)
    op = h.core.create_topics([NewTopic("t")], now=h.now)
    while len(h.core.deadlines) < 2:  # until the refusal schedules a retry
        assert h.pump.step()
    assert not op.done
    h.core.close(now=h.now)
    assert isinstance(op.error, RequestCancelled)
    assert len(h.core.deadlines) == 0


def test_answers_about_items_not_asked_for_are_ignored() -> None:
    from kafkacore.client.metadata import TopicPartition as TP
    from kafkacore.protocol.messages import create_partitions_response as cp
    from kafkacore.protocol.messages import metadata_response as md
    from kafkacore.protocol.messages import offset_fetch_response as of
    from tests.admin.fakeadmin import Group

    h = Harness()
    h.world.add_topic("a")
    h.world.groups["g"] = Group("g", offsets={TP("a", 0): 1})

    def extra_topic(b: FakeBroker, body: Any, v: int) -> Any:
        return m.CreateTopicsResponse(
            topics=[ct.CreatableTopicResult(name="x"), ct.CreatableTopicResult(name="t")]
        )

    def extra_deleted(b: FakeBroker, body: Any, v: int) -> Any:
        return m.DeleteTopicsResponse(
            responses=[dt.DeletableTopicResult(name="x"), dt.DeletableTopicResult(name="a")]
        )

    def extra_grown(b: FakeBroker, body: Any, v: int) -> Any:
        return m.CreatePartitionsResponse(
            results=[
                cp.CreatePartitionsTopicResult(name="x"),
                cp.CreatePartitionsTopicResult(name="a"),
            ]
        )

    def extra_described(b: FakeBroker, body: Any, v: int) -> Any:
        if body.topics != [] and body.topics is not None:
            return m.MetadataResponse(
                topics=[md.MetadataResponseTopic(name="x"), md.MetadataResponseTopic(name="a")]
            )
        return None

    def extra_offset(b: FakeBroker, body: Any, v: int) -> Any:
        parts = [
            of.OffsetFetchResponsePartitions(partition_index=p, committed_offset=5) for p in (0, 1)
        ]
        return m.OffsetFetchResponse(
            groups=[
                of.OffsetFetchResponseGroup(
                    group_id="g", topics=[of.OffsetFetchResponseTopics(name="a", partitions=parts)]
                )
            ]
        )

    h.world.script(ApiKey.CREATE_TOPICS, extra_topic)
    h.world.script(ApiKey.DELETE_TOPICS, extra_deleted)
    h.world.script(ApiKey.CREATE_PARTITIONS, extra_grown)
    h.world.script(ApiKey.METADATA, extra_described)
    h.world.script(ApiKey.OFFSET_FETCH, extra_offset)
    assert list(h.result(h.core.describe_topics(["a"], now=h.now))) == ["a"]
    assert list(h.result(h.core.create_topics([NewTopic("t")], now=h.now))) == ["t"]
    from kafkacore.admin import NewPartitions

    assert list(h.result(h.core.create_partitions({"a": NewPartitions(2)}, now=h.now))) == ["a"]
    assert list(h.result(h.core.delete_topics(["a"], now=h.now))) == ["a"]
    assert list(h.result(h.core.list_consumer_group_offsets("g", [TP("a", 0)], now=h.now))) == [
        TP("a", 0)
    ]


def test_a_silent_coordinator_is_looked_up_again_before_the_retry() -> None:
    from tests.admin.fakeadmin import Group

    h = Harness(2, request_timeout_ms=1000)
    h.world.groups["g"] = Group("g")
    h.world.coordinator("g", 1)
    assert h.result(h.core.describe_consumer_groups(["g"], now=h.now))["g"].ok
    lookups = (
        len(h.world.requests(ApiKey.FIND_COORDINATOR))
        if ApiKey.FIND_COORDINATOR in h.world.scripts
        else None
    )
    finds_before = sum(1 for _, api, _, _ in h.world.seen if api == ApiKey.FIND_COORDINATOR)
    assert lookups is None and finds_before == 0  # FindCoordinator is the fake's own handler
    silent = h.pump.brokers[("127.0.0.1", 9093)]
    silent.hold = True  # broker 1 stops answering; the group moves to broker 0
    h.world.coordinator("g", 0)
    result = h.result(h.core.describe_consumer_groups(["g"], now=h.now))
    assert result["g"].result().coordinator == 0
    assert h.core.client.cluster.coordinator_for_group("g") == 0


def test_a_silent_controller_the_retry_reaches_the_new_one() -> None:
    h = Harness(2, request_timeout_ms=1000)
    h.world.cluster.controller_id = 1
    h.core.client.request_metadata_update(now=h.now)
    h.pump.run()
    assert h.result(h.core.create_topics([NewTopic("a")], now=h.now))["a"].ok
    h.pump.brokers[("127.0.0.1", 9093)].hold = True  # the controller goes silent...
    h.world.script(ApiKey.CREATE_TOPICS, lambda b, body, v: m.CreateTopicsResponse())  # (unheard)
    h.world.cluster.controller_id = 0  # ...and broker 0 takes over
    before = h.core.client.cluster.update_count
    assert h.result(h.core.create_topics([NewTopic("b")], now=h.now))["b"].ok
    assert h.core.client.cluster.update_count > before
    assert [n for n, api, _, _ in h.world.seen if api == ApiKey.CREATE_TOPICS][-1] == 0


def test_the_command_mixins_define_no_name_twice() -> None:
    """AdminCore is assembled from one mixin per area: a helper name defined in
    two of them would silently shadow one with the other."""
    from kafkacore.admin._base import AdminBase

    seen: dict[str, str] = {}
    for mixin in AdminCore.__mro__:
        if mixin in (AdminCore, AdminBase) or not issubclass(mixin, AdminBase):
            continue
        for name in vars(mixin):
            if name.startswith("__"):
                continue
            assert name not in seen, f"{name} is defined in {seen.get(name)} and {mixin.__name__}"
            seen[name] = mixin.__name__
    assert "create_topics" in seen and "describe_log_dirs" in seen


def test_request_level_errors_are_kept_once_per_item_at_most() -> None:
    h = Harness()
    job = Job(Operation(99, "x"), ["a", "b"], deadline=1.0, timeout_ms=1000, finish=items_outcome)
    first, second = KafkaTimeoutError("one"), KafkaTimeoutError("two")
    h.core._fail_all(job, ["a", "b"], first)
    h.core._fail_all(job, ["a", "b"], second)  # nothing left to settle: not kept
    assert job.wide_errors == [first]
    assert job.results["a"].error is first
