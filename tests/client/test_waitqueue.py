"""The wait queue: group order, deadline heap, bounded leftovers."""

from __future__ import annotations

import random

from hypothesis import given
from hypothesis import strategies as st

from kafkacore.client._waitqueue import Pending, WaitQueue
from kafkacore.client.handles import RequestHandle
from kafkacore.client.routing import AnyNode, Node, PartitionLeader, Target


def pending(i: int, target: Target, deadline: float, *, internal: bool = False) -> Pending:
    handle = RequestHandle(id=i, request=None, api_key=3, target=target, lane="default")
    return Pending(
        handle=handle,
        deadline=deadline,
        timeout_s=1.0,
        expect_response=True,
        on_done=(lambda answer, t: None) if internal else None,
    )


def test_front_requests_jump_the_queue_and_groups_merge_by_age() -> None:
    q = WaitQueue()
    a, b, c = pending(1, Node(0), 9), pending(2, AnyNode(), 9), pending(3, Node(0), 9)
    meta = pending(4, AnyNode(), 9, internal=True)
    for p in (a, b, c):
        q.push(p)
    q.push(meta, front=True)
    assert len(q) == 4 and q.user_count == 3
    order = []
    heap = q.keys_by_head()
    import heapq

    while heap:
        _, key = heapq.heappop(heap)
        p = q.pop_head(key)
        order.append(p.handle.id)
        nxt = q.head(key)
        if nxt is not None:
            heapq.heappush(heap, (nxt.seq, key))
    assert order == [4, 1, 2, 3]
    assert not q and q.user_count == 0


def test_expiry_and_reasons() -> None:
    q = WaitQueue()
    early, late = pending(1, PartitionLeader("t", 0), 1.0), pending(2, Node(1), 5.0)
    q.push(late)
    q.push(early)
    cause = ValueError("why")
    q.set_reason((PartitionLeader("t", 0), "default"), "no known leader", cause)
    assert q.next_deadline() == 1.0
    assert q.pop_expired(0.5) == []
    assert q.pop_expired(1.0) == [(early, "no known leader", cause)]
    assert q.next_deadline() == 5.0
    q.remove(late)
    assert q.next_deadline() is None and not q


@given(st.lists(st.integers(0, 3), min_size=1, max_size=400), st.integers(0, 2**16))
def test_heap_leftovers_stay_bounded(ops: list[int], seed: int) -> None:
    rng = random.Random(seed)
    q = WaitQueue()
    q.push(pending(0, Node(9), 1e9))  # a long-lived request pins the heap top
    live: list[Pending] = []
    for i, op in enumerate(ops, start=1):
        if op < 2 or not live:
            p = pending(i, Node(rng.randint(0, 2)), 100 + rng.random())
            q.push(p)
            live.append(p)
        elif op == 2:
            p = live.pop(rng.randrange(len(live)))
            q.remove(p)
        else:
            key = q.key_of(live[0])
            popped = q.pop_head(key)
            live.remove(popped)
        assert q.heap_size <= 3 * (len(q) + 1) + 64
    assert len(q) == len(live) + 1
