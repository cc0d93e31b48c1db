"""KafkaClientCore's step as a command, its Deadlines, and the broker id on errors.

Issue 11's leftovers and issue 12's per-request work: a stacked owner steps
the client itself (commands only queue), a step looks only at the
connections something happened to, every deadline lives in one
``Deadlines``, and an error code from a response keeps the node that sent it.
"""

from __future__ import annotations

from kafkacore.client import KafkaClientCore, Node
from kafkacore.client.response_errors import broker_error, classify
from kafkacore.errors import BrokerError
from kafkacore.protocol import messages as m
from kafkacore.protocol.enums import ErrorCode
from tests.client.fakebroker import Pump, Topic, boot


def _connected(n: int = 1, **config: object) -> tuple[KafkaClientCore, Pump]:
    core, pump, _ = boot(n, **config)
    for node in range(n):
        h = core.send(m.MetadataRequest(topics=[]), now=pump.now, target=Node(node))
        pump.run(until=lambda h=h: h.done)  # type: ignore[misc]
    return core, pump


def test_a_bare_client_writes_a_request_in_the_send_call() -> None:
    core, pump = _connected()
    core.send(m.MetadataRequest(topics=[]), now=pump.now, target=Node(0))
    assert not core.step_due
    assert any(type(a).__name__ == "WriteData" for a in core.pull_actions())


def test_a_stacked_client_queues_until_its_owner_steps_it() -> None:
    core, pump = _connected()
    core.set_stacked()
    handle = core.send(m.MetadataRequest(topics=[]), now=pump.now, target=Node(0))
    assert core.step_due and core.pull_actions() == []
    assert core.next_deadline() == pump.now  # due at once: never forgotten
    assert core.step(now=pump.now) is True
    assert not core.step_due and core.step(now=pump.now) is False
    pump.run(until=lambda: handle.done)
    assert handle.value is not None


def test_next_deadline_is_none_after_shutdown() -> None:
    core, pump, _ = boot()
    core.send(m.MetadataRequest(topics=[]), now=pump.now, target=Node(0))
    assert core.next_deadline() is not None  # the request's timeout, the idle timer
    core.shutdown(now=pump.now)
    assert core.next_deadline() is None
    core.handle_timeout(now=pump.now + 1000)  # a late timer is harmless
    assert core.next_deadline() is None


def test_deadlines_are_named_per_reason_and_per_connection() -> None:
    core, _ = _connected(2)
    keys = set(core._deadlines._at)
    conn_keys = {k for k in keys if isinstance(k, tuple) and k[0] == "conn"}
    assert conn_keys == {("conn", cid) for cid in core._pool.conns}
    assert "refresh" in keys  # metadata_max_age_ms
    assert core.next_deadline() == min(core._deadlines._at.values())


def test_a_step_drains_only_the_connections_something_happened_to() -> None:
    core, pump = _connected(2)
    assert len(core._pool.conns) >= 2
    drained: list[int] = []
    for conn in core._pool.conns.values():
        real = conn.pull_writes

        def spy(conn_id: int = conn.conn_id, real=real) -> list[bytes]:  # type: ignore[no-untyped-def]
            drained.append(conn_id)
            return real()

        conn.pull_writes = spy  # type: ignore[method-assign]
    target = core._pool.conn(1, "default")
    assert target is not None
    core.send(m.MetadataRequest(topics=[]), now=pump.now, target=Node(1))
    assert set(drained) == {target.conn_id}


def test_an_idle_connection_times_out_through_its_own_deadline() -> None:
    core, _ = _connected(1, connections_max_idle_ms=1000)
    conn = next(iter(core._pool.conns.values()))
    at = core._deadlines.get(("conn", conn.conn_id))
    assert at is not None and at == conn.next_deadline()
    core.handle_timeout(now=at)
    assert conn.closed and ("conn", conn.conn_id) not in core._deadlines


def test_broker_errors_keep_their_code_and_the_node_that_answered() -> None:
    error = broker_error(ErrorCode.NOT_LEADER_OR_FOLLOWER, "fetching t-0", node_id=3)
    assert isinstance(error, BrokerError)
    assert error.code == ErrorCode.NOT_LEADER_OR_FOLLOWER and error.node_id == 3
    assert broker_error(ErrorCode.NONE, node_id=3) is None
    assert BrokerError("x").node_id is None
    response = m.MetadataResponse(topics=[_topic(ErrorCode.TOPIC_AUTHORIZATION_FAILED)])
    verdict = classify(response, 7)
    assert verdict is not None and verdict.node_id == 7
    assert [(e.code, e.node_id) for e in verdict.errors()] == [
        (ErrorCode.TOPIC_AUTHORIZATION_FAILED, 7)
    ]


def _topic(code: int) -> object:
    from kafkacore.protocol.messages.metadata_response import MetadataResponseTopic

    return MetadataResponseTopic(error_code=code, name="t")


def test_a_topic_failure_from_metadata_names_the_broker_that_answered() -> None:
    core, pump, _ = boot(2, [Topic("secret", error_code=ErrorCode.TOPIC_AUTHORIZATION_FAILED)])
    core.add_topic("secret", now=pump.now)
    pump.run(until=lambda: core.cluster.topic_failure("secret") is not None)
    failure = core.cluster.topic_failure("secret")
    assert failure is not None and failure.code == ErrorCode.TOPIC_AUTHORIZATION_FAILED
    assert failure.node_id in (0, 1)


def test_a_send_with_others_waiting_takes_the_full_step_and_keeps_their_order() -> None:
    core, pump = _connected(2)
    pump.brokers[("127.0.0.1", 9093)].hold = True  # node 1 answers nothing for now
    first = core.send(m.MetadataRequest(topics=[]), now=pump.now, target=Node(1))
    second = core.send(m.MetadataRequest(topics=[]), now=pump.now, target=Node(0))
    assert not core._write_alone(pump.now)  # nothing queued alone: nothing done
    pump.run(until=lambda: second.done)
    assert not first.done  # held by its broker, not overtaken or lost
    pump.release()
    pump.run(until=lambda: first.done)
    assert first.value is not None and second.value is not None


def test_a_send_that_cannot_be_written_yet_falls_back_to_the_step() -> None:
    core, pump, _ = boot(2)
    handle = core.send(m.MetadataRequest(topics=[]), now=pump.now, target=Node(1))
    assert len(core._requests.queue) == 1  # no connection to node 1 yet: queued
    assert core._deadlines.get("queue") is not None  # its timeout is armed by the step
    pump.run(until=lambda: handle.done)
    assert handle.value is not None


# -- a request nobody waits ahead of is written at send (issue 11) --------------------------
def test_a_stacked_send_with_nothing_queued_is_written_before_the_step() -> None:
    core, pump = _connected()
    core.set_stacked()
    handle = core.send(m.MetadataRequest(topics=[]), now=pump.now, target=Node(0))
    assert handle.node_id == 0 and handle.id in core._requests.in_flight
    assert len(core._requests.queue) == 0
    assert core.pull_actions() == []  # the bytes leave with the owner's step
    assert core.step(now=pump.now) is True
    assert [type(a).__name__ for a in core.pull_actions()] == ["WriteData"]


def test_a_send_behind_a_queued_request_waits_its_turn_even_to_a_ready_node() -> None:
    core, pump = _connected(2)
    core.set_stacked()
    pump.brokers[("127.0.0.1", 9093)].hold = True
    for _ in range(core._config.max_in_flight_requests_per_connection):
        core.send(m.MetadataRequest(topics=[]), now=pump.now, target=Node(1))
        core.step(now=pump.now)
    blocked = core.send(m.MetadataRequest(topics=[]), now=pump.now, target=Node(1))
    assert blocked.node_id is None  # node 1 is at its in-flight limit: queued
    later = core.send(m.MetadataRequest(topics=[]), now=pump.now, target=Node(0))
    assert later.node_id is None and len(core._requests.queue) == 2  # not written ahead
    pump.run(until=lambda: later.done)
    pump.release()
    pump.run(until=lambda: blocked.done)


def test_targets_a_dispatch_pass_must_resolve_are_queued() -> None:
    from kafkacore.client.routing import AnyNode

    core, pump = _connected()
    core.set_stacked()
    handle = core.send(m.MetadataRequest(topics=[]), now=pump.now, target=AnyNode())
    assert handle.node_id is None and len(core._requests.queue) == 1
    pump.run(until=lambda: handle.done)
    assert handle.value is not None
