"""The client core's requests between ``send`` and their completion.

Theory of operation
-------------------
:class:`Dispatcher` keeps every request the core accepted until it
completes, exactly once:

    queued --written--> in flight --answered/failed--> done
       \\--expired, cancelled, refused--------------------^

Queued requests wait in a :class:`~kafkacore.client._waitqueue.WaitQueue`,
grouped by (target, lane). Each dispatch pass resolves every group's target
to a node (:meth:`Dispatcher.route`: any node = least loaded; a node; a
partition leader; a group or transaction coordinator; the controller) and
writes the group's head if that node's connection on the lane is READY and
below its in-flight limit, else asks for a connection and notes why the
group waits (the reason, and the error behind it, name the node in the
KafkaTimeoutError of a request that expires waiting). A request never
overtakes an earlier one for the same (node, lane).

Unknown routes ask for what would make them known: a metadata refresh
(partition leaders, the controller, nodes missing from the metadata) or a
coordinator lookup. A group whose topic failed for good (authorization, an
unknown error code) or whose coordinator lookup was refused fails at once.

A request completes with its response or an error; internal requests (the
core's own Metadata, FindCoordinator and telemetry) finish through their
``on_done`` callback, an :data:`~kafkacore.client.handles.OnAnswer` called
with the response or the error (the stacked machines' shape), user requests
through a ``RequestCompleted`` event.
"""

from __future__ import annotations

import heapq
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from kafkacore.client import _codec
from kafkacore.client._waitqueue import GroupKey, Pending, WaitQueue
from kafkacore.client.config import ClientConfig
from kafkacore.client.connection import BrokerConnection
from kafkacore.client.coordinators import CoordinatorLookups
from kafkacore.client.events import RequestCompleted
from kafkacore.client.handles import OnAnswer, R, RequestHandle
from kafkacore.client.metadata import ClusterMetadata, TopicPartition
from kafkacore.client.outputs import Outputs
from kafkacore.client.pool import ConnectionPool, unreachable_within
from kafkacore.client.refresh import MetadataRefresh
from kafkacore.client.routing import (
    AnyNode,
    Controller,
    GroupCoordinator,
    Node,
    PartitionLeader,
    Target,
    TransactionCoordinator,
    describe_target,
    is_target,
)
from kafkacore.errors import (
    KafkaError,
    KafkaTimeoutError,
    LocalProtocolError,
    NoCommonVersionError,
    RequestCancelled,
)

if TYPE_CHECKING:
    from kafkacore.protocol._base import Request, Response

__all__ = ["Dispatcher", "check_request"]

#: Why a (node, lane) cannot take a request this pass, and the error behind it.
_Blocker = tuple[str, BaseException | None]


class Dispatcher:
    """See the module docstring."""

    def __init__(
        self,
        config: ClientConfig,
        cluster: ClusterMetadata,
        pool: ConnectionPool,
        coordinators: CoordinatorLookups,
        refresh: MetadataRefresh,
        *,
        topics: set[str],
        out: Outputs,
    ) -> None:
        self._config = config
        self._cluster = cluster
        self._pool = pool
        self._coordinators = coordinators
        self._refresh = refresh
        self._topics = topics
        self._out = out
        self.queue = WaitQueue()
        self.in_flight: dict[int, Pending] = {}  # handle id -> pending
        self._next_handle_id = 1

    # -- accepting and ending requests ---------------------------------------
    def enqueue(
        self,
        request: Request[R],
        api_key: int,
        target: Target,
        lane: str,
        now: float,
        *,
        timeout_ms: int | None = None,
        expect_response: bool = True,
        build: Callable[[int], Request[R]] | None = None,
        on_done: OnAnswer[R] | None = None,
        front: bool = False,
        max_version: int | None = None,
        write_now: bool = False,
    ) -> RequestHandle[R]:
        """Queue one request (``on_done``: an internal one, finished by that callback;
        with ``build``, ``request`` only names the API).

        ``write_now``: when nothing at all waits in the queue, the route is
        known and the connection can take it, write it at once instead of
        queueing it for the next dispatch pass (issue 11: a produce does not
        walk the queue's machinery for a request nobody is ahead of). Only
        for requests that finish through an event, so no ``on_done`` runs
        inside the caller's ``send``."""
        limit = self._config.max_queued_requests
        if on_done is None and self.queue.user_count >= limit:
            raise LocalProtocolError(
                f"send: {self.queue.user_count} requests already wait for a connection "
                f"(max_queued_requests={limit}); wait for completions"
            )
        handle: RequestHandle[R] = RequestHandle(
            id=self._next_handle_id, request=request, api_key=api_key, target=target, lane=lane
        )
        self._next_handle_id += 1
        timeout_s = (timeout_ms or self._config.request_timeout_ms) / 1000
        pending = Pending(
            handle=handle,
            deadline=now + timeout_s,
            timeout_s=timeout_s,
            expect_response=expect_response,
            build=build,
            on_done=on_done,
            max_version=max_version,
        )
        if write_now and on_done is None and not self.queue and self._write_now(pending, now):
            return handle
        self.queue.push(pending, front=front)
        return handle

    def _write_now(self, pending: Pending, now: float) -> bool:
        """Write ``pending`` if no pass could do better; False: queue it."""
        handle = pending.handle
        target = handle.target
        if isinstance(target, Node):
            node: int | None = target.node_id
        elif isinstance(target, PartitionLeader):
            if self._cluster.topic_failure(target.topic) is not None:
                return False  # the dispatch pass fails the group, saying why
            node = self.peek_route(target)
        else:
            return False  # any node, coordinators, the controller: a pass decides
        if node is None or self._cluster.broker_metadata(node) is None:
            return False
        conn = self._pool.conn(node, handle.lane)
        if conn is None or not conn.can_send:
            return False
        self._write(pending, conn, node, now)
        return True

    def take(self, handle: RequestHandle[Any]) -> Pending:
        """Remove ``handle``'s request, queued or in flight (for ``cancel``)."""
        queued = self.queue.get(handle.id)
        if queued is not None and queued.handle is handle:
            self.queue.remove(queued)
            return queued
        in_flight = self.in_flight.pop(handle.id, None)
        if in_flight is None or in_flight.handle is not handle:
            raise LocalProtocolError(f"cancel: {handle!r} does not belong to this client")
        return in_flight

    def finish(
        self, pending: Pending, response: Response | None, error: BaseException | None, now: float
    ) -> None:
        """Complete ``pending`` (exactly once) and say so: an internal request's
        ``on_done`` gets its answer, the response or the error."""
        handle = pending.handle
        counters = self._out.counters
        if error is not None:
            counters.requests_failed += 1
            if isinstance(error, KafkaTimeoutError):
                counters.requests_timed_out += 1
            elif isinstance(error, RequestCancelled):
                counters.requests_cancelled += 1
        handle._complete(response, error)
        self._out.trace(
            "complete", id=handle.id, api_key=handle.api_key, node_id=handle.node_id, error=error
        )
        if pending.on_done is not None:
            pending.on_done(response if error is None else error, now)
        else:
            self._out.events.append(RequestCompleted(handle=handle, response=response, error=error))

    def fail_queued(self, error: BaseException, now: float) -> None:
        """Fail every queued request with ``error``."""
        for pending in self.queue.take_where(lambda _key: True):
            self.finish(pending, None, error, now)

    def cancel_in_flight(self, node_id: int, lane: str, now: float) -> None:
        """Cancel the requests in flight on (node, lane): its connection is being closed."""
        for handle in [
            p.handle
            for p in self.in_flight.values()
            if p.handle.node_id == node_id and p.handle.lane == lane and not p.handle.done
        ]:
            pending = self.in_flight.pop(handle.id)
            self.finish(
                pending,
                None,
                RequestCancelled(f"request #{handle.id} cancelled: connection closed"),
                now,
            )

    def expire(self, now: float) -> None:
        """Fail the queued requests whose deadline passed, saying why they waited."""
        for pending, reason, cause in self.queue.pop_expired(now):
            handle = pending.handle
            what = (
                f"request #{handle.id} ({_codec.api_name(handle.api_key)}) "
                f"to {describe_target(handle.target)} "
                f"not sent within {pending.timeout_s * 1000:.0f} ms"
            )
            # Its bound passed: a cluster never reached is said as such (issue 26).
            unreachable = self._pool.never_reached()
            error: KafkaError
            if unreachable is not None:
                error = unreachable_within(what, unreachable)
            else:
                if cause is not None and str(cause) not in reason:
                    reason = f"{reason} (last error: {cause})"
                error = KafkaTimeoutError(f"{what}: {reason}")
                if cause is not None:
                    error.__cause__ = cause
            self.finish(pending, None, error, now)

    # -- routing --------------------------------------------------------------
    def peek_route(self, target: Target) -> int | None:
        """Resolve a target without side effects (None when unknown)."""
        if isinstance(target, Node):
            return target.node_id
        if isinstance(target, PartitionLeader):
            tp = TopicPartition(target.topic, target.partition)
            leader = self._cluster.leader_for_partition(tp)
            return leader if leader is not None and leader >= 0 else None
        if isinstance(target, GroupCoordinator | TransactionCoordinator):
            return self._coordinators.node_for(target)
        if isinstance(target, Controller):
            return self._cluster.controller_id
        return None

    def route(
        self, target: Target, lane: str, now: float
    ) -> tuple[int | None, str, BaseException | None]:
        """The node for ``target`` now, or None, why, and the error behind it
        (asking for what is missing)."""
        if isinstance(target, AnyNode):
            node = self._pool.least_loaded(now, lane)
            if node is not None:
                return node, "", None
            reason = "every node is backing off after failures"
            return None, reason, self._pool.health.latest_error()
        node = self.peek_route(target)
        if node is not None:
            if self._cluster.broker_metadata(node) is None:
                self._cluster.need_update = True
                return None, f"node {node} is not in the metadata", self._refresh.last_error
            return node, "", None
        # Unknown route: ask for what would make it known.
        if isinstance(target, GroupCoordinator | TransactionCoordinator):
            return None, self._coordinators.want(target, now), None
        self._cluster.need_update = True
        if isinstance(target, PartitionLeader):
            if target.topic not in self._topics and not self._config.metadata_all_topics:
                self._topics.add(target.topic)
            reason = f"no known leader for {target.topic}-{target.partition}"
            return None, reason, self._refresh.last_error
        return None, "no known controller", self._refresh.last_error

    # -- dispatch -------------------------------------------------------------
    def dispatch(self, now: float) -> None:
        """Write what can be written, merging groups by the age of their heads."""
        queue = self.queue
        order = queue.keys_by_head()
        blocked: dict[tuple[int, str], _Blocker] = {}
        while order:
            _, key = heapq.heappop(order)
            pending = queue.head(key)
            if pending is None or self._failed_for_good(key, now):
                continue
            target, lane = key
            node, reason, cause = self.route(target, lane, now)
            if node is None:
                queue.set_reason(key, reason, cause)
                continue
            blocker = blocked.get((node, lane))
            if blocker is None:
                blocker = self._blocker(node, lane, now)
            if blocker is not None:
                blocked[(node, lane)] = blocker
                queue.set_reason(key, *blocker)
                continue
            conn = self._pool.conn(node, lane)
            assert conn is not None  # _blocker found it ready
            queue.pop_head(key)
            self._write(pending, conn, node, now)
            following = queue.head(key)
            if following is not None:
                heapq.heappush(order, (following.seq, key))

    def _failed_for_good(self, key: GroupKey, now: float) -> bool:
        """Fail the group at once if waiting cannot help; True if it did."""
        target = key[0]
        failure: BaseException | None = None
        if isinstance(target, PartitionLeader):
            # Not retriable (authorization, an unknown error code...): fail
            # now rather than when the requests' deadlines pass.
            failure = self._cluster.topic_failure(target.topic)
        elif isinstance(target, GroupCoordinator | TransactionCoordinator):
            failure = self._coordinators.take_refusal(target)
        if failure is None:
            return False
        for doomed in self.queue.take_where(lambda other: other == key):
            self.finish(doomed, None, failure, now)
        return True

    def _blocker(self, node: int, lane: str, now: float) -> _Blocker | None:
        """Why (node, lane) cannot take a request now (None: it can); connects if needed."""
        slot = self._pool.slot(node, lane)
        conn = slot.conn
        if conn is not None and conn.can_send:
            return None
        cause = None
        if conn is None:
            self._pool.open(slot, now)
            why = f"{self._pool.describe_node(node)} is not connected"
            cause = self._pool.health.last_error(node)
            if cause is not None:
                why += f" (last error: {cause})"
        else:
            why = f"{self._pool.describe_node(node)} is {conn.state.value}" + (
                " at its in-flight limit" if conn.ready else ""
            )
        return why, cause

    def _write(self, pending: Pending, conn: BrokerConnection, node: int, now: float) -> None:
        handle = pending.handle
        try:
            version = conn.version_for(handle.api_key)
            if pending.max_version is not None and version > pending.max_version:
                version = _capped_version(conn, handle.api_key, pending.max_version)
            message = pending.build(version) if pending.build else handle.request
            self._pool.touch(conn)
            conn.send(
                handle,
                message,
                version=version,
                now=now,
                expect_response=pending.expect_response,
                timeout_s=pending.timeout_s,
            )
        except (NoCommonVersionError, LocalProtocolError) as exc:
            self.finish(pending, None, exc, now)
            return
        self.in_flight[handle.id] = pending
        counters = self._out.counters
        counters.requests_sent += 1
        counters.by_api[handle.api_key] += 1
        self._out.trace(
            "send",
            id=handle.id,
            api_key=handle.api_key,
            version=version,
            node_id=node,
            lane=handle.lane,
        )


def _capped_version(conn: BrokerConnection, api_key: int, cap: int) -> int:
    ours = _codec.our_version_range(api_key)
    theirs = conn.broker_versions.get(api_key)
    low = max(ours[0] if ours else 0, theirs[0] if theirs else 0)
    if cap < low:
        raise NoCommonVersionError(
            f"{_codec.api_name(api_key)}: the caller caps the version at v{cap}, below "
            f"the lowest version both sides accept (v{low}) on node {conn.node_id}"
        )
    return cap


def check_request(
    request: object,
    target: Target | None,
    lane: str,
    timeout_ms: int | None,
    max_version: int | None,
) -> int:
    """The API key of ``request``; LocalProtocolError naming a bad argument."""
    api_key = getattr(type(request), "API_KEY", None)
    if not isinstance(api_key, int):
        raise LocalProtocolError(
            f"send: {type(request).__name__} is not a request message (no API_KEY)"
        )
    if _codec.our_version_range(api_key) is None:
        raise LocalProtocolError(f"send: API key {api_key} has no codec in kafkacore")
    if target is not None and not is_target(target):
        raise LocalProtocolError(f"send: {target!r} is not a routing target")
    if not isinstance(lane, str) or not lane:
        raise LocalProtocolError("send: lane must be a non-empty string")
    if timeout_ms is not None and (isinstance(timeout_ms, bool) or timeout_ms <= 0):
        raise LocalProtocolError(f"send: timeout_ms {timeout_ms!r} must be a positive int")
    if max_version is not None and (isinstance(max_version, bool) or max_version < 0):
        raise LocalProtocolError(f"send: max_version {max_version!r} must be an int >= 0")
    return api_key
