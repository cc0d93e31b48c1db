"""Requests waiting for a route or a ready connection, grouped by target.

Theory of operation
-------------------
Every queued request gets a sequence number (metadata refreshes jump the
queue with negative ones). Requests are kept in one FIFO per
``(target, lane)``: all requests of a group resolve to the same node at any
moment, so the dispatcher resolves a group once per pass instead of once per
request, and a blocked group costs one look, not one per request. The
dispatcher merges groups by the sequence number of their heads, which keeps
the global rule "no request overtakes an earlier one for the same
(node, lane)". Deadlines live in a heap with lazy deletion, so expiry and
``next_deadline`` cost O(log n) per request instead of a scan.
"""

from __future__ import annotations

import heapq
from collections import deque
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from kafkacore.client.handles import OnAnswer, RequestHandle
from kafkacore.client.routing import Target

if TYPE_CHECKING:
    from kafkacore.protocol._base import Request

__all__ = ["GroupKey", "Pending", "WaitQueue"]

GroupKey = tuple[Target, str]


@dataclass(eq=False, slots=True)
class Pending:
    """One request between ``send`` and its write (or its end)."""

    handle: RequestHandle[Any]
    deadline: float
    timeout_s: float
    expect_response: bool
    # Internal requests are built per negotiated version and finish through
    # on_done (with the answer) instead of a RequestCompleted event. The
    # queue holds requests of every response type: erased here, checked
    # against the request by Dispatcher.enqueue.
    build: Callable[[int], Request[Any]] | None = None
    on_done: OnAnswer[Any] | None = None
    # A caller's cap on the negotiated version (the producer keeps Produce at
    # v11 and EndTxn at v4 unless it speaks transactions v2, KIP-890).
    max_version: int | None = None
    seq: int = 0
    queued: bool = False


@dataclass(eq=False, slots=True)
class _Group:
    items: deque[Pending]
    reason: str = "no node chosen yet"
    #: The error behind ``reason`` (a node's last connection failure...), if any.
    cause: BaseException | None = None


class WaitQueue:
    """See the module docstring."""

    __slots__ = ("_by_id", "_deadlines", "_front", "_groups", "_seq", "_stale", "user_count")

    def __init__(self) -> None:
        self._groups: dict[GroupKey, _Group] = {}
        self._by_id: dict[int, Pending] = {}
        self._deadlines: list[tuple[float, int, Pending]] = []
        self._seq = 0
        self._front = 0
        self._stale = 0  # heap entries of requests no longer queued
        #: Queued requests issued by users (internal ones excluded).
        self.user_count = 0

    @property
    def heap_size(self) -> int:
        """Deadline entries held, stale ones included (bounded; for tests)."""
        return len(self._deadlines)

    def __len__(self) -> int:
        return len(self._by_id)

    def __bool__(self) -> bool:
        return bool(self._by_id)

    @staticmethod
    def key_of(pending: Pending) -> GroupKey:
        return (pending.handle.target, pending.handle.lane)

    def push(self, pending: Pending, *, front: bool = False) -> None:
        if front:
            self._front -= 1
            pending.seq = self._front
        else:
            self._seq += 1
            pending.seq = self._seq
        key = self.key_of(pending)
        group = self._groups.get(key)
        if group is None:
            group = self._groups[key] = _Group(deque())
        if front:
            group.items.appendleft(pending)
        else:
            group.items.append(pending)
        pending.queued = True
        self._by_id[pending.handle.id] = pending
        heapq.heappush(self._deadlines, (pending.deadline, pending.seq, pending))
        if pending.on_done is None:
            self.user_count += 1

    def _forget(self, pending: Pending) -> None:
        pending.queued = False
        del self._by_id[pending.handle.id]
        if pending.on_done is None:
            self.user_count -= 1

    def _left_in_heap(self, count: int) -> None:
        # Lazy deletion leaves heap entries behind; bound the leftovers so a
        # long-lived request at the top cannot make the heap grow without end.
        self._stale += count
        if self._stale > 2 * len(self._by_id) + 64:
            self._deadlines = [e for e in self._deadlines if e[2].queued]
            heapq.heapify(self._deadlines)
            self._stale = 0

    def get(self, handle_id: int) -> Pending | None:
        return self._by_id.get(handle_id)

    def remove(self, pending: Pending) -> None:
        """Take ``pending`` out wherever it is in its group."""
        self._unlink(pending)
        self._left_in_heap(1)

    def _unlink(self, pending: Pending) -> None:
        key = self.key_of(pending)
        group = self._groups[key]
        group.items.remove(pending)
        if not group.items:
            del self._groups[key]
        self._forget(pending)

    # -- dispatch ---------------------------------------------------------------
    def keys_by_head(self) -> list[tuple[int, GroupKey]]:
        """A heap of ``(head sequence, group)`` for a dispatch pass."""
        order = [(group.items[0].seq, key) for key, group in self._groups.items()]
        heapq.heapify(order)
        return order

    def head(self, key: GroupKey) -> Pending | None:
        group = self._groups.get(key)
        return None if group is None else group.items[0]

    def pop_head(self, key: GroupKey) -> Pending:
        group = self._groups[key]
        pending = group.items.popleft()
        if not group.items:
            del self._groups[key]
        self._forget(pending)
        self._left_in_heap(1)
        return pending

    def set_reason(self, key: GroupKey, reason: str, cause: BaseException | None = None) -> None:
        group = self._groups.get(key)
        if group is not None:
            group.reason = reason
            group.cause = cause

    def reason(self, key: GroupKey) -> str:
        group = self._groups.get(key)
        return "no node chosen yet" if group is None else group.reason

    def targets(self) -> Iterator[Target]:
        return (key[0] for key in self._groups)

    # -- deadlines --------------------------------------------------------------
    def next_deadline(self) -> float | None:
        heap = self._deadlines
        while heap and not heap[0][2].queued:
            heapq.heappop(heap)
            self._stale -= 1
        return heap[0][0] if heap else None

    def pop_expired(self, now: float) -> list[tuple[Pending, str, BaseException | None]]:
        """Remove and return every request whose deadline passed, with its group's
        reason and the error behind it."""
        out: list[tuple[Pending, str, BaseException | None]] = []
        heap = self._deadlines
        while heap and (not heap[0][2].queued or heap[0][0] <= now):
            _, _, pending = heapq.heappop(heap)
            if not pending.queued:
                self._stale -= 1
            else:
                group = self._groups[self.key_of(pending)]
                reason, cause = group.reason, group.cause
                self._unlink(pending)  # its heap entry is already gone
                out.append((pending, reason, cause))
        return out

    # -- bulk -------------------------------------------------------------------
    def take_where(self, wanted: Callable[[GroupKey], bool]) -> list[Pending]:
        """Remove the groups ``wanted`` selects; their requests in sequence order."""
        out: list[Pending] = []
        for key in [k for k in self._groups if wanted(k)]:
            group = self._groups.pop(key)
            for pending in group.items:
                self._forget(pending)
                out.append(pending)
        self._left_in_heap(len(out))
        out.sort(key=lambda p: p.seq)
        return out
