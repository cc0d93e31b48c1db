"""Assignors by protocol name: the built-ins and user-registered ones.

Theory of operation: an :class:`Assignor` is a record around a pure
function ``(members, partitions) -> plan``, plus what the group protocol
needs to know about it: its protocol name (the string members put in
JoinGroup, equal to Java's so mixed groups agree), the rebalance protocols
it supports, whether it wants partition racks, and how a member encodes its
subscription user data. :meth:`Assignor.assign` checks the input and the
answer, so a buggy user assignor fails loudly on the leader rather than
handing one partition to two consumers.

The registry is a plain name -> Assignor mapping; the four Java names are
built in and cannot be replaced.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass

from kafkacore.assignors._types import (
    Member,
    PartitionRacks,
    Plan,
    RebalanceProtocol,
    TopicPartition,
    check_input,
    check_plan,
)
from kafkacore.assignors.range import range_assign
from kafkacore.assignors.roundrobin import roundrobin_assign
from kafkacore.assignors.sticky import (
    cooperative_sticky_assign,
    cooperative_sticky_user_data,
    sticky_assign,
    sticky_user_data,
)
from kafkacore.errors import LocalProtocolError

__all__ = [
    "AssignFn",
    "Assignor",
    "UserDataFn",
    "assignor_names",
    "common_protocol",
    "get_assignor",
    "register_assignor",
    "unregister_assignor",
]

#: ``(members, partitions) -> member_id -> partitions``; rack-aware ones also take
#: ``partition_racks=`` as a keyword.
AssignFn = Callable[..., Mapping[str, Sequence[TopicPartition]]]

#: ``(last assignment or None, generation) -> subscription user data or None``.
UserDataFn = Callable[[Sequence[TopicPartition] | None, int], bytes | None]


@dataclass(frozen=True, slots=True, kw_only=True)
class Assignor:
    """A named assignment strategy; see the module docstring."""

    name: str
    fn: AssignFn
    protocols: tuple[RebalanceProtocol, ...] = (RebalanceProtocol.EAGER,)
    rack_aware: bool = False
    user_data_fn: UserDataFn | None = None
    version: int = 0

    def assign(
        self,
        members: Sequence[Member],
        partitions: Mapping[str, int],
        *,
        partition_racks: PartitionRacks | None = None,
    ) -> Plan:
        """Run the strategy on a group snapshot and return a checked plan."""
        check_input(members, partitions, partition_racks)
        if self.rack_aware:
            raw = self.fn(members, partitions, partition_racks=partition_racks)
        else:
            raw = self.fn(members, partitions)
        return check_plan(self.name, raw, members, partitions)

    def user_data(self, assigned: Sequence[TopicPartition] | None, generation: int) -> bytes | None:
        """Subscription user data for a member whose last assignment was ``assigned``."""
        return None if self.user_data_fn is None else self.user_data_fn(assigned, generation)


_BUILTIN: dict[str, Assignor] = {
    a.name: a
    for a in (
        Assignor(name="range", fn=range_assign, rack_aware=True),
        Assignor(name="roundrobin", fn=roundrobin_assign),
        Assignor(name="sticky", fn=sticky_assign, rack_aware=True, user_data_fn=sticky_user_data),
        Assignor(
            name="cooperative-sticky",
            fn=cooperative_sticky_assign,
            protocols=(RebalanceProtocol.COOPERATIVE, RebalanceProtocol.EAGER),
            rack_aware=True,
            user_data_fn=cooperative_sticky_user_data,
        ),
    )
}
_registry: dict[str, Assignor] = dict(_BUILTIN)


def register_assignor(
    name: str,
    fn: AssignFn,
    *,
    protocols: Iterable[RebalanceProtocol] = (RebalanceProtocol.EAGER,),
    rack_aware: bool = False,
    user_data_fn: UserDataFn | None = None,
    version: int = 0,
    replace: bool = False,
) -> Assignor:
    """Register ``fn`` under protocol ``name`` and return its :class:`Assignor`.

    Registering a taken name fails unless ``replace=True``; the built-in
    names never can be replaced.
    """
    if not isinstance(name, str) or not name:
        raise LocalProtocolError(f"register_assignor: name must be a non-empty str, got {name!r}")
    if not callable(fn):
        raise TypeError(
            f"register_assignor: assignor {name!r} is {type(fn).__name__}, not callable"
        )
    protos = tuple(RebalanceProtocol(p) for p in protocols)
    if not protos:
        raise LocalProtocolError(f"register_assignor: assignor {name!r} must support a protocol")
    if name in _BUILTIN:
        raise LocalProtocolError(
            f"register_assignor: {name!r} is a built-in assignor; register yours under another name"
        )
    if name in _registry and not replace:
        raise LocalProtocolError(
            f"register_assignor: {name!r} is already registered; pass replace=True to replace it"
        )
    assignor = Assignor(
        name=name,
        fn=fn,
        protocols=protos,
        rack_aware=rack_aware,
        user_data_fn=user_data_fn,
        version=version,
    )
    _registry[name] = assignor
    return assignor


def unregister_assignor(name: str) -> None:
    """Remove a user-registered assignor."""
    if name in _BUILTIN:
        raise LocalProtocolError(f"unregister_assignor: {name!r} is built in and stays")
    if _registry.pop(name, None) is None:
        raise LocalProtocolError(f"unregister_assignor: no assignor named {name!r} is registered")


def get_assignor(name: str) -> Assignor:
    """The assignor registered as ``name``."""
    try:
        return _registry[name]
    except KeyError:
        raise LocalProtocolError(
            f"no assignor named {name!r}; known: {', '.join(sorted(_registry))}; "
            "register it with register_assignor()"
        ) from None


def assignor_names() -> list[str]:
    """Names of all registered assignors, sorted."""
    return sorted(_registry)


def common_protocol(assignors: Iterable[Assignor]) -> RebalanceProtocol:
    """The rebalance protocol a consumer uses with these assignors configured.

    As in Java: the highest protocol every configured assignor supports, so
    ``["cooperative-sticky"]`` gives COOPERATIVE and adding ``"range"`` falls
    back to EAGER.
    """
    common: set[RebalanceProtocol] | None = None
    names = []
    for a in assignors:
        names.append(a.name)
        common = set(a.protocols) if common is None else common & set(a.protocols)
    if common is None:
        raise LocalProtocolError("common_protocol: configure at least one assignor")
    if not common:
        raise LocalProtocolError(
            f"assignors {names} share no rebalance protocol; configure compatible assignors"
        )
    return max(common)
