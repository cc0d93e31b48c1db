"""What the error codes inside a response mean for the client core.

Theory of operation
-------------------
A response that arrives is never an error for the request that carried it
(its codes are the caller's to read), but some codes say something about the
cluster the client core must act on, whoever sent the request:

* a code that invalidates metadata (NOT_LEADER_OR_FOLLOWER,
  UNKNOWN_TOPIC_OR_PARTITION, ...: the generated error table's flag) makes
  the core refresh metadata;
* a code of the "coordinator moved" group (COORDINATOR_LOAD_IN_PROGRESS,
  COORDINATOR_NOT_AVAILABLE, NOT_COORDINATOR) makes it forget the
  coordinator the request was routed to;
* a top-level REBOOTSTRAP_REQUIRED (KIP-1102) makes it bootstrap again.

:func:`classify` scans a decoded response for every non-zero
``error_code``, however deep (partitions inside topics inside the
response), and returns a :class:`ResponseVerdict` naming the node that
answered. :func:`broker_error` is how the machines turn a code of a
response into its :class:`~kafkacore.errors.BrokerError`: the error keeps
the code and the broker id (``node_id``), so a user sees which broker said
it. The scan is planned once
per generated class (:func:`scan_plan`): a response visits only the fields
whose subtree can hold an ``error_code``, so a Fetch response full of
records costs a walk over its partition headers, not over its data.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from kafkacore.client import _codec
from kafkacore.errors import BrokerError
from kafkacore.protocol.enums import COORDINATOR_MOVED, ErrorCode

if TYPE_CHECKING:
    from kafkacore.protocol._base import Response

__all__ = ["ResponseVerdict", "broker_error", "classify", "error_codes", "scan_plan"]

#: How deep nested structs are followed (Kafka's responses nest three levels).
_MAX_DEPTH = 4


@dataclass(frozen=True, slots=True)
class ResponseVerdict:
    """What a response's error codes ask of the client core."""

    #: Every non-zero error code in the response.
    codes: frozenset[int]
    #: The top-level code is REBOOTSTRAP_REQUIRED (KIP-1102).
    rebootstrap: bool
    #: Some code invalidates metadata: refresh it.
    refresh_metadata: bool
    #: Some code says the coordinator moved: forget the request's coordinator.
    coordinator_moved: bool
    #: The broker that sent the response (None when not known).
    node_id: int | None = None

    def errors(self) -> list[BrokerError]:
        """One error per code, each naming the broker that answered."""
        found = (broker_error(code, node_id=self.node_id) for code in sorted(self.codes))
        return [e for e in found if e is not None]


def broker_error(
    code: int, message: str | None = None, *, node_id: int | None
) -> BrokerError | None:
    """The exception for ``code`` from a response of broker ``node_id`` (None for 0)."""
    return _codec.error_for_code(code, message, node_id=node_id)


#: Per generated class: (has an ``error_code`` field, struct-typed fields
#: whose subtree can hold one). Filled lazily, once per class.
_SCAN_PLAN: dict[type, tuple[bool, tuple[str, ...]]] = {}


def scan_plan(cls: type, depth: int = 0) -> tuple[bool, tuple[str, ...]]:
    """``(has error_code, fields worth descending into)`` of a generated class."""
    plan = _SCAN_PLAN.get(cls)
    if plan is None:
        fields = getattr(cls, "FIELDS", ())
        has_code = any(meta.attr == "error_code" for meta in fields)
        nested = tuple(
            meta.attr
            for meta in fields
            if meta.struct is not None
            and depth < _MAX_DEPTH
            and _subtree_has_code(scan_plan(meta.struct, depth + 1))
        )
        plan = _SCAN_PLAN[cls] = (has_code, nested)
    return plan


def _subtree_has_code(plan: tuple[bool, tuple[str, ...]]) -> bool:
    return plan[0] or bool(plan[1])


def error_codes(obj: Any) -> set[int]:
    """Every non-zero ``error_code`` in a decoded response (structs and arrays of them)."""
    verdict = classify(obj)
    return set() if verdict is None else set(verdict.codes)


def classify(response: Response | None, node_id: int | None = None) -> ResponseVerdict | None:
    """The verdict on ``response`` (sent by ``node_id``), or None when it
    carries no error code at all. The walk is written out here, not in a
    helper: every response of the client passes through it (issue 12)."""
    codes: set[int] = set()
    # Structs of every shape below the response: read by their scan plans.
    stack: list[Any] = [response]
    while stack:
        item = stack.pop()
        has_code, nested = scan_plan(type(item))
        if has_code:
            code = item.error_code
            if code:
                codes.add(code)
        for attr in nested:
            value = getattr(item, attr)
            if isinstance(value, list):
                stack.extend(value)
            elif value is not None:
                stack.append(value)
    if not codes:
        return None
    return ResponseVerdict(
        codes=frozenset(codes),
        rebootstrap=getattr(response, "error_code", ErrorCode.NONE)
        == ErrorCode.REBOOTSTRAP_REQUIRED,
        refresh_metadata=any(_codec.invalidates_metadata(code) for code in codes),
        coordinator_moved=bool(codes & COORDINATOR_MOVED),
        node_id=node_id,
    )
