"""Properties of the admin machine under a disturbed cluster (hypothesis).

A random batch of commands runs while the cluster misbehaves between pump
rounds: group coordinators and partition leaders move, brokers stop
answering for a while, every connection drops. Whatever happens:

- every operation completes, exactly once, with one OperationCompleted;
- none completes after its deadline;
- an operation's per-item value names exactly the items asked for, in order;
- once everything completed, nothing is pending and no admin timer is left.
"""

from __future__ import annotations

import random
from collections.abc import Callable
from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from kafkacore.admin import (
    AclBinding,
    AclOperation,
    ConfigResource,
    ConfigResourceType,
    ItemResults,
    NewTopic,
    OffsetSpec,
    ResourceType,
)
from kafkacore.client.metadata import TopicPartition as TP
from kafkacore.operation import Operation, OperationCompleted
from tests.admin.fakeadmin import Group, Harness

BROKERS = 3
Command = Callable[[Harness], tuple[Operation[Any], list[Any] | None]]


def _items(keys: list[Any]) -> Callable[[Operation[Any]], list[Any] | None]:
    return lambda op: keys


COMMANDS: list[tuple[str, Command]] = [
    (
        "create",
        lambda h: (h.core.create_topics([NewTopic("n1"), NewTopic("t")], now=h.now), ["n1", "t"]),
    ),
    ("delete", lambda h: (h.core.delete_topics(["gone", "nope"], now=h.now), ["gone", "nope"])),
    (
        "describe_topics",
        lambda h: (h.core.describe_topics(["t", "nope"], now=h.now), ["t", "nope"]),
    ),
    ("list_topics", lambda h: (h.core.list_topics(now=h.now), None)),
    ("cluster", lambda h: (h.core.describe_cluster(now=h.now), None)),
    (
        "configs",
        lambda h: (
            h.core.describe_configs(
                [
                    ConfigResource(ConfigResourceType.BROKER, "2"),
                    ConfigResource(ConfigResourceType.TOPIC, "t"),
                ],
                now=h.now,
            ),
            [
                ConfigResource(ConfigResourceType.BROKER, "2"),
                ConfigResource(ConfigResourceType.TOPIC, "t"),
            ],
        ),
    ),
    ("list_groups", lambda h: (h.core.list_groups(now=h.now), None)),
    (
        "describe_groups",
        lambda h: (h.core.describe_consumer_groups(["g", "k"], now=h.now), ["g", "k"]),
    ),
    ("group_offsets", lambda h: (h.core.list_consumer_group_offsets("g", now=h.now), None)),
    (
        "alter_offsets",
        lambda h: (
            h.core.alter_consumer_group_offsets("e", {TP("t", 0): 1}, now=h.now),
            [TP("t", 0)],
        ),
    ),
    (
        "list_offsets",
        lambda h: (
            h.core.list_offsets({TP("t", p): OffsetSpec.latest() for p in range(3)}, now=h.now),
            [TP("t", p) for p in range(3)],
        ),
    ),
    ("delete_records", lambda h: (h.core.delete_records({TP("t", 1): 0}, now=h.now), [TP("t", 1)])),
    (
        "acls",
        lambda h: (
            h.core.create_acls(
                [
                    AclBinding(
                        resource_type=ResourceType.TOPIC,
                        resource_name="t",
                        principal="User:a",
                        operation=AclOperation.READ,
                    )
                ],
                now=h.now,
            ),
            None,
        ),
    ),
    ("share", lambda h: (h.core.describe_share_groups(["s"], now=h.now), ["s"])),
    ("log_dirs", lambda h: (h.core.describe_log_dirs(now=h.now), None)),
    ("elect", lambda h: (h.core.elect_leaders(partitions=[TP("t", 0)], now=h.now), [TP("t", 0)])),
    ("transactions", lambda h: (h.core.list_transactions(now=h.now), None)),
    ("producers", lambda h: (h.core.describe_producers([TP("t", 2)], now=h.now), [TP("t", 2)])),
]

DISTURBANCES = ["none", "move_coordinator", "move_leader", "hold", "release", "drop"]


def _world(seed: int, api_timeout_ms: int, request_timeout_ms: int) -> Harness:
    h = Harness(
        BROKERS, seed=seed, api_timeout_ms=api_timeout_ms, request_timeout_ms=request_timeout_ms
    )
    w = h.world
    w.add_topic("t", 3, {0: 0, 1: 1, 2: 2})
    w.add_topic("gone")
    w.groups["g"] = Group("g", state="Stable", offsets={TP("t", 0): 3})
    w.groups["k"] = Group("k", type="consumer", state="Stable")
    w.groups["e"] = Group("e", protocol_type="")
    w.groups["s"] = Group("s", type="share", protocol_type="share")
    return h


def _disturb(h: Harness, what: str, rng: random.Random) -> None:
    w = h.world
    if what == "move_coordinator":
        w.coordinator(rng.choice(["g", "k", "e", "s"]), rng.randrange(BROKERS))
    elif what == "move_leader":
        w.cluster.topics["t"].leaders[rng.randrange(3)] = rng.randrange(BROKERS)
    elif what == "hold":
        rng.choice(list(h.pump.brokers.values())).hold = True
    elif what == "release":
        for broker in h.pump.brokers.values():
            broker.hold = False
        h.pump.release()
    elif what == "drop":
        h.pump.lose_cluster()
        h.pump.refuse = set()


@given(
    picks=st.lists(st.sampled_from(range(len(COMMANDS))), min_size=1, max_size=6),
    disturbances=st.lists(st.sampled_from(DISTURBANCES), max_size=40),
    seed=st.integers(0, 2**16),
    api_timeout_ms=st.sampled_from([300, 2000, 10000]),
    request_timeout_ms=st.sampled_from([200, 1000, 30000]),
)
def test_every_command_completes_once_by_its_deadline(
    picks: list[int],
    disturbances: list[str],
    seed: int,
    api_timeout_ms: int,
    request_timeout_ms: int,
) -> None:
    h = _world(seed, api_timeout_ms, request_timeout_ms)
    rng = random.Random(seed)
    started = h.now
    ops = [(COMMANDS[i][0], *COMMANDS[i][1](h)) for i in picks]
    finished: dict[int, float] = {}

    def note() -> None:
        for _, op, _ in ops:
            if op.done and op.id not in finished:
                finished[op.id] = h.now

    for what in disturbances:
        _disturb(h, what, rng)
        # A disturbance (a dropped connection) may itself complete an operation:
        # note it at this time, before the harness jumps to the next deadline.
        note()
        if not h.pump.step():
            deadline = h.core.next_deadline()
            if deadline is not None:
                h.pump.now = max(h.pump.now, deadline)
                h.core.handle_timeout(now=h.pump.now)
                h.pump.drain()
        note()
    _disturb(h, "release", rng)
    for _ in range(5000):
        if all(op.done for _, op, _ in ops):
            break
        h.pump.run(rounds=1)
        note()
    note()
    assert all(op.done for _, op, _ in ops), [repr(op) for _, op, _ in ops]
    h.pump.run(rounds=50)
    events = [e.handle.id for e in h.pump.events if isinstance(e, OperationCompleted)]
    for name, op, keys in ops:
        assert events.count(op.id) == 1, name
        assert finished[op.id] <= started + api_timeout_ms / 1000 + 1e-9, name
        if keys is not None and op.error is None:
            assert isinstance(op.value, ItemResults) and list(op.value) == keys, name
    assert h.core.pending_operations == 0
    assert not any(isinstance(k, tuple) for k in h.core.deadlines._at), h.core.deadlines
