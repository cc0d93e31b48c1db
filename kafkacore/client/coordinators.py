"""Coordinator lookups of the client core: FindCoordinator, batched, with backoff.

Theory of operation
-------------------
A request routed to a group or transaction coordinator whose node is not
known asks :class:`CoordinatorLookups` for it (:meth:`~CoordinatorLookups.want`).
The lookups then run one FindCoordinator request per key type at a time
(group, transaction):

    IDLE --start (keys due)--> LOOKING --answer, failure or expiry--> IDLE

A lookup carries every key of its type that is due (KIP-699 batches them at
FindCoordinator v4+); below v4 it carries the first one and the others stay
due for the next lookup. The key list is fixed when the request is built for
the version of the connection that carries it (:meth:`Lookup.build`).

When the lookup finishes, each key it carried (every wanted key of its type
if it never reached a broker) ends one of three ways:

* found: the node goes into the cluster metadata's coordinator cache
  (:meth:`~kafkacore.client.metadata.ClusterMetadata.add_coordinator`) and
  the key is no longer wanted;
* refused with an error retrying cannot fix (GROUP_AUTHORIZATION_FAILED,
  TRANSACTIONAL_ID_AUTHORIZATION_FAILED...): the refusal is kept, once, for
  the requests waiting for that coordinator (:meth:`~CoordinatorLookups.take_refusal`);
* missed (a retriable code, no answer, a lost connection): while some request
  still waits for it, the key is due again after an exponential backoff over
  consecutive misses (KIP-580, ``retry_backoff_ms`` to ``retry_backoff_max_ms``
  with jitter); otherwise it is dropped.

A coordinator that moved (a response of the "coordinator moved" group, see
:mod:`kafkacore.client.response_errors`) is forgotten from the cache
(:meth:`~CoordinatorLookups.coordinator_moved`); the next request for it
looks it up again.
"""

from __future__ import annotations

import random
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from enum import Enum
from typing import TYPE_CHECKING

from kafkacore.client import _codec
from kafkacore.client.backoff import ExponentialBackoff
from kafkacore.client.handles import Answer
from kafkacore.client.metadata import ClusterMetadata
from kafkacore.client.outputs import Outputs
from kafkacore.client.routing import GroupCoordinator, Target, TransactionCoordinator
from kafkacore.errors import LocalProtocolError
from kafkacore.protocol.enums import CoordinatorType
from kafkacore.protocol.error_codes import error_class

if TYPE_CHECKING:
    from kafkacore.protocol.messages import FindCoordinatorRequest, FindCoordinatorResponse

__all__ = [
    "TRANSITIONS",
    "CoordinatorKey",
    "CoordinatorLookups",
    "Lookup",
    "LookupState",
    "coordinator_key",
    "coordinator_keys",
]

#: ``(CoordinatorType, key)``: a group id or a transactional id.
CoordinatorKey = tuple[int, str]

CoordinatorTarget = GroupCoordinator | TransactionCoordinator


class LookupState(Enum):
    """Whether a FindCoordinator request of one key type is under way."""

    IDLE = "idle"
    LOOKING = "looking"


TRANSITIONS: Mapping[LookupState, frozenset[LookupState]] = {
    LookupState.IDLE: frozenset({LookupState.LOOKING}),
    LookupState.LOOKING: frozenset({LookupState.IDLE}),
}


def coordinator_key(target: CoordinatorTarget) -> CoordinatorKey:
    if isinstance(target, GroupCoordinator):
        return (CoordinatorType.GROUP, target.group_id)
    return (CoordinatorType.TRANSACTION, target.transactional_id)


def coordinator_keys(targets: Iterable[Target]) -> set[CoordinatorKey]:
    """The coordinator keys among ``targets`` (the others are ignored)."""
    return {
        coordinator_key(t)
        for t in targets
        if isinstance(t, GroupCoordinator | TransactionCoordinator)
    }


@dataclass(eq=False, slots=True)
class Lookup:
    """One FindCoordinator request for the due keys of one key type."""

    key_type: int
    #: The keys that were due when the lookup started (sorted).
    keys: list[str]
    #: The keys the request carries, fixed by :meth:`build` (empty until then).
    included: list[str] = field(default_factory=list)

    def build(self, version: int) -> FindCoordinatorRequest:
        """The request for the version negotiated on the connection that carries it."""
        self.included[:] = self.keys if version >= 4 else self.keys[:1]
        return _codec.find_coordinator_request(self.key_type, self.included, version=version)


class CoordinatorLookups:
    """See the module docstring."""

    def __init__(
        self,
        cluster: ClusterMetadata,
        backoff: ExponentialBackoff,
        *,
        rng: random.Random,
        out: Outputs,
    ) -> None:
        self._cluster = cluster
        self._backoff = backoff
        self._rng = rng
        self._out = out
        self._states: dict[int, LookupState] = {kt: LookupState.IDLE for kt in CoordinatorType}
        self._wanted: dict[CoordinatorKey, float] = {}  # key -> not before
        self._misses: dict[CoordinatorKey, int] = {}  # key -> consecutive misses
        self._refusals: dict[CoordinatorKey, BaseException] = {}

    # -- queries --------------------------------------------------------------
    def state(self, key_type: int) -> LookupState:
        return self._states[key_type]

    @property
    def wanted(self) -> Mapping[CoordinatorKey, float]:
        """Keys to look up, each with the time before which it is not due."""
        return self._wanted

    def misses(self, key: CoordinatorKey) -> int:
        return self._misses.get(key, 0)

    def node_for(self, target: CoordinatorTarget) -> int | None:
        """The cached coordinator of ``target`` (None when unknown)."""
        if isinstance(target, GroupCoordinator):
            return self._cluster.coordinator_for_group(target.group_id)
        return self._cluster.coordinator_for_transaction(target.transactional_id)

    def due(self, now: float) -> bool:
        """True when a lookup could start now."""
        return bool(self._wanted) and any(
            self._states[kt] is LookupState.IDLE and not_before <= now
            for (kt, _), not_before in self._wanted.items()
        )

    def next_deadline(self, now: float) -> float | None:
        """The earliest time a key backing off becomes due (None: none is)."""
        if not self._wanted:
            return None
        later = [t for t in self._wanted.values() if t > now]
        return min(later) if later else None

    # -- commands -------------------------------------------------------------
    def want(self, target: CoordinatorTarget, now: float) -> str:
        """Look ``target``'s coordinator up (unless already wanted); why the request waits."""
        self._wanted.setdefault(coordinator_key(target), now)
        if isinstance(target, GroupCoordinator):
            return f"no known coordinator for group {target.group_id!r}"
        return f"no known coordinator for transactional id {target.transactional_id!r}"

    def start(self, now: float) -> list[Lookup]:
        """A lookup per idle key type with keys due; the caller sends each one."""
        lookups: list[Lookup] = []
        if not self._wanted:
            return lookups
        for key_type in CoordinatorType:
            if self._states[key_type] is not LookupState.IDLE:
                continue
            keys = sorted(
                k
                for (kt, k), not_before in self._wanted.items()
                if kt == key_type and not_before <= now
            )
            if keys:
                self._goto(key_type, LookupState.LOOKING)
                lookups.append(Lookup(key_type=key_type, keys=keys))
        return lookups

    def finished(
        self,
        lookup: Lookup,
        answer: Answer[FindCoordinatorResponse],
        now: float,
        *,
        needed: set[CoordinatorKey],
        node_id: int | None = None,
    ) -> None:
        """``lookup`` ended with ``answer``, the response (from ``node_id``) or
        the error; ``needed``: the keys requests still wait for."""
        key_type = lookup.key_type
        self._goto(key_type, LookupState.IDLE)
        keys = lookup.included or [k for kt, k in self._wanted if kt == key_type]
        error = answer if isinstance(answer, BaseException) else None
        for key in keys:
            wanted = (key_type, key)
            if not isinstance(answer, BaseException):
                found = self._cluster.add_coordinator(key_type, key, answer)
                refusal = _refusal(key_type, key, answer, node_id)
                if refusal is not None:
                    if wanted in needed:
                        self._refusals[wanted] = refusal
                    self._drop(wanted)
                    continue
                if found is not None:
                    self._drop(wanted)
                    continue
            if wanted in needed:
                self._missed(wanted, error, now)
            else:
                self._drop(wanted)  # nobody waits any more: stop looking it up

    def take_refusal(self, target: CoordinatorTarget) -> BaseException | None:
        """The refusal for ``target``'s coordinator, once (None if there is none)."""
        return self._refusals.pop(coordinator_key(target), None)

    def coordinator_moved(self, target: Target) -> None:
        """A response said ``target``'s coordinator moved: forget it."""
        if isinstance(target, GroupCoordinator | TransactionCoordinator):
            self._cluster.mark_coordinator_unknown(*coordinator_key(target))

    def clear(self) -> None:
        """Stop every lookup to come (the client stopped); one in flight ends alone."""
        self._wanted.clear()
        self._misses.clear()
        self._refusals.clear()

    # -- internals ------------------------------------------------------------
    def _goto(self, key_type: int, new: LookupState) -> None:
        old = self._states[key_type]
        if new not in TRANSITIONS[old]:
            raise LocalProtocolError(
                f"coordinator lookup for key type {CoordinatorType(key_type).name}: "
                f"{old.value} -> {new.value}"
            )
        self._states[key_type] = new

    def _drop(self, key: CoordinatorKey) -> None:
        self._wanted.pop(key, None)
        self._misses.pop(key, None)

    def _missed(self, key: CoordinatorKey, error: BaseException | None, now: float) -> None:
        # KIP-580: each consecutive miss doubles the wait (jittered).
        misses = self._misses.get(key, 0) + 1
        self._misses[key] = misses
        delay = self._backoff.delay_ms(misses, self._rng)
        self._wanted[key] = now + delay / 1000
        self._out.trace(
            "coordinator_retry",
            key_type=key[0],
            key=key[1],
            misses=misses,
            delay_ms=delay,
            error=error,
        )


def _refusal(
    key_type: int, key: str, response: FindCoordinatorResponse, node_id: int | None = None
) -> BaseException | None:
    """A FindCoordinator error for ``key`` that retrying will not fix, or None."""
    code = ClusterMetadata.coordinator_error_code(key, response)
    cls = error_class(code) if code else None
    if cls is None or cls.retriable:
        return None
    what = "group" if key_type == CoordinatorType.GROUP else "transactional id"
    refusal = cls(f"FindCoordinator for {what} {key!r} refused: error code {code}")
    refusal.node_id = node_id
    return refusal
