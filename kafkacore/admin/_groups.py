"""Group commands: list, describe and delete consumer groups and share groups.

Routing: a group lives on its coordinator, which the client core finds with
FindCoordinator (batched, KIP-699) and forgets when an answer says it moved
(NOT_COORDINATOR, COORDINATOR_NOT_AVAILABLE, COORDINATOR_LOAD_IN_PROGRESS);
those answers are sent again after the backoff. Listing asks every broker
(each lists the groups it coordinates): first a Metadata request for the
broker list, then ListGroups to each, each broker retried or failed on its
own.

Describing a consumer group tries ConsumerGroupDescribe first (KIP-848
groups); a classic group is not found there (GROUP_ID_NOT_FOUND), and a
broker without that API refuses it: both fall back to DescribeGroups, as
the Java admin client does.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

from kafkacore.admin._base import Job, code_error, items_outcome, single_outcome
from kafkacore.admin._checks import check_bool, check_name, check_names, check_timeout
from kafkacore.admin._describe import classic_group, consumer_group, share_group
from kafkacore.admin._routing import SEARCH, BrokerFanout
from kafkacore.admin.group_types import (
    ConsumerGroupDescription,
    GroupListing,
    GroupListings,
    GroupState,
    GroupType,
    ShareGroupDescription,
)
from kafkacore.admin.results import ItemResults
from kafkacore.client._codec import find_coordinator_request
from kafkacore.client.handles import RequestHandle
from kafkacore.client.routing import AnyNode, GroupCoordinator, Node
from kafkacore.errors import NoCommonVersionError, RemoteProtocolError
from kafkacore.operation import Operation
from kafkacore.protocol import messages as m
from kafkacore.protocol.enums import COORDINATOR_MOVED, CoordinatorType, ErrorCode

__all__ = ["GroupCommands"]

#: ListGroups v4 added the states filter (KIP-518), v5 the types filter (KIP-848).
_STATES_VERSION = 4
_TYPES_VERSION = 5
#: ConsumerGroupDescribe answers for groups it does not hold (classic ones):
#: ask DescribeGroups instead.
_NOT_A_CONSUMER_GROUP = frozenset({ErrorCode.GROUP_ID_NOT_FOUND, ErrorCode.UNSUPPORTED_VERSION})
#: Consumer groups: KIP-848 ones and classic ones (of consumers, or offsets only).
_CONSUMER_TYPES = frozenset({GroupType.CLASSIC, GroupType.CONSUMER})
_CONSUMER_PROTOCOLS = frozenset({"consumer", ""})

Keep = Callable[[GroupListing], bool]


def _states(what: str, states: object) -> list[GroupState] | None:
    if states is None:
        return None
    if isinstance(states, str) or not isinstance(states, Iterable):
        raise TypeError(f"{what}: states must be a collection of GroupState, got {states!r}")
    out = [GroupState.parse(s) for s in states]
    if GroupState.UNKNOWN in out:
        raise ValueError(f"{what}: unknown group state in {list(states)}")
    return out


def _types(what: str, types: object) -> list[GroupType] | None:
    if types is None:
        return None
    if isinstance(types, str) or not isinstance(types, Iterable):
        raise TypeError(f"{what}: types must be a collection of GroupType, got {types!r}")
    out = [GroupType.parse(t) for t in types]
    if GroupType.UNKNOWN in out:
        raise ValueError(f"{what}: unknown group type in {list(types)}")
    return out


def _listings_outcome(job: Job) -> tuple[Any, BaseException | None]:
    brokers = job.results[SEARCH]
    if brokers.error is not None:
        return None, brokers.error
    groups: list[GroupListing] = []
    errors: dict[int, BaseException] = {}
    for key in job.keys[1:]:
        item = job.results[key]
        if item.error is not None:
            errors[key] = item.error
        else:
            groups.extend(item.value or ())
    groups.sort(key=lambda g: g.group_id)
    return GroupListings(groups=tuple(groups), errors=errors), None


class GroupCommands(BrokerFanout):
    """Group commands of :class:`~kafkacore.admin.AdminCore`."""

    # ------------------------------------------------------------ listing
    def list_groups(
        self,
        *,
        states: Iterable[GroupState | str] | None = None,
        types: Iterable[GroupType | str] | None = None,
        timeout_ms: int | None = None,
        now: float,
    ) -> Operation[GroupListings]:
        """Every group of every type the brokers hold (filters: ListGroups v4+/v5+)."""
        st, ty = _states("list_groups", states), _types("list_groups", types)
        return self._list("list_groups", st, ty, lambda g: True, timeout_ms, now)

    def list_consumer_groups(
        self,
        *,
        states: Iterable[GroupState | str] | None = None,
        types: Iterable[GroupType | str] | None = None,
        timeout_ms: int | None = None,
        now: float,
    ) -> Operation[GroupListings]:
        """Consumer groups, classic and KIP-848 (``types`` narrows to one of them)."""
        st = _states("list_consumer_groups", states)
        ty = _types("list_consumer_groups", types)
        if ty is not None and not set(ty) <= _CONSUMER_TYPES:
            raise ValueError(
                f"list_consumer_groups: types must be CLASSIC or CONSUMER, got {ty}; "
                "use list_groups or list_share_groups for other groups"
            )

        def keep(g: GroupListing) -> bool:
            # Classic groups of other protocols (Kafka Connect's "connect") are
            # not consumer groups; ListGroups before v5 gives no type at all.
            return g.protocol_type in _CONSUMER_PROTOCOLS and g.type in (None, *_CONSUMER_TYPES)

        return self._list("list_consumer_groups", st, ty, keep, timeout_ms, now)

    def list_share_groups(
        self,
        *,
        states: Iterable[GroupState | str] | None = None,
        timeout_ms: int | None = None,
        now: float,
    ) -> Operation[GroupListings]:
        """Share groups (KIP-932; needs ListGroups v5+)."""
        st = _states("list_share_groups", states)
        return self._list(
            "list_share_groups", st, [GroupType.SHARE], lambda g: True, timeout_ms, now
        )

    def _list(
        self,
        kind: str,
        states: list[GroupState] | None,
        types: list[GroupType] | None,
        keep: Keep,
        timeout_ms: int | None,
        now: float,
    ) -> Operation[GroupListings]:
        job = self._begin(kind, [SEARCH], _listings_outcome, check_timeout(kind, timeout_ms), now)

        def list_on(nodes: list[int], t: float) -> None:
            for node in nodes:
                self._list_on(job, kind, node, states, types, keep, list_on, t)

        self._each_broker(job, list_on, now)
        return self._started(job, now)

    def _list_on(
        self,
        job: Job,
        kind: str,
        node: int,
        states: list[GroupState] | None,
        types: list[GroupType] | None,
        keep: Keep,
        again: Any,
        now: float,
    ) -> None:
        def build(version: int) -> m.ListGroupsRequest:
            request = m.ListGroupsRequest()
            for wanted, need, name in (
                (states, _STATES_VERSION, "states"),
                (types, _TYPES_VERSION, "types"),
            ):
                if wanted is not None and version < need:
                    raise NoCommonVersionError(
                        f"{kind}: filtering by {name} needs ListGroups v{need}+; "
                        f"broker {node} offers v{version}"
                    )
            if states is not None:
                request.states_filter = [s.value for s in states]
            if types is not None:
                request.types_filter = [t.value for t in types]
            return request

        def answer(
            response: m.ListGroupsResponse, handle: RequestHandle[m.ListGroupsResponse], t: float
        ) -> None:
            code = response.error_code
            if code:
                error = code_error(code, None, "ListGroups", node_id=node)
                if code in COORDINATOR_MOVED:
                    self._retry_items(job, [(node, error)], again, t)
                else:
                    job.settle(node, error=error)
                return
            version = handle.api_version or 0
            listings = [
                GroupListing(
                    group_id=g.group_id,
                    protocol_type=g.protocol_type,
                    state=GroupState.parse(g.group_state) if version >= _STATES_VERSION else None,
                    type=GroupType.parse(g.group_type) if version >= _TYPES_VERSION else None,
                    coordinator=node,
                )
                for g in response.groups
            ]
            job.settle(node, [g for g in listings if keep(g)])

        self._send(
            job,
            [node],
            m.ListGroupsRequest(),
            answer,
            again,
            now=now,
            target=Node(node),
            build=build,
        )

    # --------------------------------------------------------- describing
    def describe_consumer_groups(
        self,
        group_ids: Iterable[str],
        *,
        include_authorized_operations: bool = False,
        timeout_ms: int | None = None,
        now: float,
    ) -> Operation[ItemResults[str, ConsumerGroupDescription]]:
        """Members, assignments and state of consumer groups, classic or KIP-848."""
        kind = "describe_consumer_groups"
        ids = check_names(f"{kind}: group_ids", group_ids)
        ops = check_bool(f"{kind}: include_authorized_operations", include_authorized_operations)
        job = self._begin(kind, ids, items_outcome, check_timeout(kind, timeout_ms), now)

        def consumer(keys: list[str], t: float) -> None:
            for g in keys:
                request = m.ConsumerGroupDescribeRequest(
                    group_ids=[g], include_authorized_operations=ops
                )

                def refused(error: BaseException, t2: float, g: str = g) -> None:
                    if isinstance(error, NoCommonVersionError):
                        classic([g], t2)  # a broker from before KIP-848
                    else:
                        self._failed(job, [g], error, consumer, t2)

                self._send(
                    job,
                    [g],
                    request,
                    on_consumer,
                    consumer,
                    now=t,
                    target=GroupCoordinator(g),
                    on_error=refused,
                )

        def on_consumer(
            response: m.ConsumerGroupDescribeResponse,
            handle: RequestHandle[m.ConsumerGroupDescribeResponse],
            t: float,
        ) -> None:
            for d in response.groups:
                if d.group_id not in ids:
                    continue
                if d.error_code in _NOT_A_CONSUMER_GROUP:
                    classic([d.group_id], t)
                elif self._group_error(job, d.group_id, d.error_code, d.error_message, consumer, t):
                    job.settle(d.group_id, consumer_group(d, handle.node_id))

        def classic(keys: list[str], t: float) -> None:
            for g in keys:
                request = m.DescribeGroupsRequest(groups=[g], include_authorized_operations=ops)
                self._send(
                    job, [g], request, on_classic, classic, now=t, target=GroupCoordinator(g)
                )

        def on_classic(
            response: m.DescribeGroupsResponse,
            handle: RequestHandle[m.DescribeGroupsResponse],
            t: float,
        ) -> None:
            for d in response.groups:
                if d.group_id not in ids:
                    continue
                code, text = d.error_code, d.error_message
                if not code and d.group_state == GroupState.DEAD.value:
                    # Before DescribeGroups v6 (KIP-1043) a missing group is "Dead".
                    code, text = ErrorCode.GROUP_ID_NOT_FOUND, "the group does not exist"
                if self._group_error(job, d.group_id, code, text, classic, t):
                    job.settle(d.group_id, classic_group(d, handle.node_id))

        consumer(ids, now)
        return self._started(job, now)

    def describe_share_groups(
        self,
        group_ids: Iterable[str],
        *,
        include_authorized_operations: bool = False,
        timeout_ms: int | None = None,
        now: float,
    ) -> Operation[ItemResults[str, ShareGroupDescription]]:
        """Members, assignments and state of share groups (ShareGroupDescribe, KIP-932)."""
        kind = "describe_share_groups"
        ids = check_names(f"{kind}: group_ids", group_ids)
        ops = check_bool(f"{kind}: include_authorized_operations", include_authorized_operations)
        job = self._begin(kind, ids, items_outcome, check_timeout(kind, timeout_ms), now)

        def send(keys: list[str], t: float) -> None:
            for g in keys:
                request = m.ShareGroupDescribeRequest(
                    group_ids=[g], include_authorized_operations=ops
                )
                self._send(job, [g], request, answer, send, now=t, target=GroupCoordinator(g))

        def answer(
            response: m.ShareGroupDescribeResponse,
            handle: RequestHandle[m.ShareGroupDescribeResponse],
            t: float,
        ) -> None:
            for d in response.groups:
                if d.group_id in ids and self._group_error(
                    job, d.group_id, d.error_code, d.error_message, send, t
                ):
                    job.settle(d.group_id, share_group(d, handle.node_id))

        send(ids, now)
        return self._started(job, now)

    def _group_error(
        self, job: Job, group: str, code: int, message: str | None, again: Any, now: float
    ) -> bool:
        """True when ``code`` is success; else retry (coordinator moved) or settle the error."""
        if not code:
            return True
        error = code_error(code, message, f"group {group!r}", node_id=self._answerer())
        if code in COORDINATOR_MOVED:
            self._retry_items(job, [(group, error)], again, now)
        else:
            job.settle(group, error=error)
        return False

    # ------------------------------------------------------- coordinators
    def find_coordinator(
        self,
        key: str,
        *,
        coordinator_type: CoordinatorType = CoordinatorType.GROUP,
        timeout_ms: int | None = None,
        now: float,
    ) -> Operation[int]:
        """The broker id of the coordinator of group (or transactional id) ``key``
        (FindCoordinator, any broker; batched from v4, KIP-699). The group commands
        find coordinators themselves; this answers the question for the caller."""
        kind = "find_coordinator"
        name = check_name(f"{kind}: key", key)
        if not isinstance(coordinator_type, CoordinatorType):
            raise TypeError(
                f"{kind}: coordinator_type: expected a CoordinatorType, got {coordinator_type!r}"
            )
        job = self._begin(kind, [name], single_outcome, check_timeout(kind, timeout_ms), now)

        def send(keys: list[str], t: float) -> None:
            def build(version: int) -> m.FindCoordinatorRequest:
                return find_coordinator_request(int(coordinator_type), [name], version=version)

            self._send(
                job,
                keys,
                m.FindCoordinatorRequest(),
                answer,
                send,
                now=t,
                target=AnyNode(),
                build=build,
            )

        def answer(
            response: m.FindCoordinatorResponse,
            handle: RequestHandle[m.FindCoordinatorResponse],
            t: float,
        ) -> None:
            found = next((c for c in response.coordinators if c.key == name), None)
            entry = response if found is None and not response.coordinators else found
            if entry is None:
                job.settle(name, error=RemoteProtocolError(f"{kind}: no answer named {name!r}"))
                return
            code, message = entry.error_code, entry.error_message
            if not code:
                job.settle(name, entry.node_id)
                return
            error = code_error(code, message, f"coordinator of {name!r}", node_id=self._answerer())
            if code in COORDINATOR_MOVED:
                self._retry_items(job, [(name, error)], send, t)
            else:
                job.settle(name, error=error)

        send([name], now)
        return self._started(job, now)

    # ----------------------------------------------------------- deleting
    def delete_consumer_groups(
        self, group_ids: Iterable[str], *, timeout_ms: int | None = None, now: float
    ) -> Operation[ItemResults[str, None]]:
        """Delete empty consumer groups and their committed offsets."""
        return self._delete("delete_consumer_groups", group_ids, timeout_ms, now)

    def delete_share_groups(
        self, group_ids: Iterable[str], *, timeout_ms: int | None = None, now: float
    ) -> Operation[ItemResults[str, None]]:
        """Delete empty share groups and their start offsets (KIP-932)."""
        return self._delete("delete_share_groups", group_ids, timeout_ms, now)

    def _delete(
        self, kind: str, group_ids: Iterable[str], timeout_ms: int | None, now: float
    ) -> Operation[ItemResults[str, None]]:
        ids = check_names(f"{kind}: group_ids", group_ids)
        job = self._begin(kind, ids, items_outcome, check_timeout(kind, timeout_ms), now)

        def send(keys: list[str], t: float) -> None:
            for g in keys:
                request = m.DeleteGroupsRequest(groups_names=[check_name(kind, g)])
                self._send(job, [g], request, answer, send, now=t, target=GroupCoordinator(g))

        def answer(
            response: m.DeleteGroupsResponse,
            handle: RequestHandle[m.DeleteGroupsResponse],
            t: float,
        ) -> None:
            for r in response.results:
                if r.group_id in ids and self._group_error(
                    job, r.group_id, r.error_code, None, send, t
                ):
                    job.settle(r.group_id, None)

        send(ids, now)
        return self._started(job, now)
