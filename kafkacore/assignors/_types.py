"""Value types shared by the group assignors, and the input checks they all run.

An assignor sees one snapshot of the group (members and what they
subscribe to, own and run on) and of the cluster (partition counts, and
optionally the racks holding each partition's replicas). It answers with a
plan: every member id mapped to the partitions it may consume next. No
I/O, no clock, no hidden state: the same input always gives the same plan.
"""

from __future__ import annotations

import enum
from collections.abc import Mapping, Sequence, Set
from dataclasses import dataclass

from kafkacore.client.metadata import TopicPartition
from kafkacore.errors import LocalProtocolError

# One TopicPartition class for the whole core (a NamedTuple: it orders by
# topic, then partition, like Java's comparator); re-exported from here.

__all__ = [
    "DEFAULT_GENERATION",
    "Member",
    "PartitionRacks",
    "Plan",
    "RebalanceProtocol",
    "TopicPartition",
]

#: Generation of a member that never completed a rebalance (Java's ``DEFAULT_GENERATION``).
DEFAULT_GENERATION = -1


def tp_name(tp: TopicPartition) -> str:
    """``topic-partition``, as Kafka logs name a partition."""
    return f"{tp.topic}-{tp.partition}"


class RebalanceProtocol(enum.IntEnum):
    """How partitions change hands; the values are Java's protocol ids.

    EAGER: every member gives up everything before a rebalance; any plan is
    safe. COOPERATIVE (KIP-429): members keep what they own while the group
    rebalances, so a plan must never hand a partition to a new owner in the
    same round its old owner still holds it.
    """

    EAGER = 0
    COOPERATIVE = 1


@dataclass(frozen=True, slots=True, kw_only=True)
class Member:
    """One group member as the leader sees it in the JoinGroup response.

    ``owned_partitions`` and ``generation`` come from ConsumerProtocol
    subscription v1+/v2+ (KIP-429, KIP-792); ``rack`` from v3 (KIP-881);
    ``user_data`` is the assignor-specific blob (the eager sticky assignor
    keeps its previous assignment there).
    """

    member_id: str
    topics: frozenset[str]
    group_instance_id: str | None = None
    owned_partitions: tuple[TopicPartition, ...] = ()
    generation: int = DEFAULT_GENERATION
    rack: str | None = None
    user_data: bytes | None = None

    def __post_init__(self) -> None:
        if not isinstance(self.member_id, str):
            raise TypeError(f"Member: member_id must be str, got {type(self.member_id).__name__}")
        if isinstance(self.topics, str) or not isinstance(self.topics, Set):
            raise TypeError(
                f"Member {self.member_id!r}: topics must be a frozenset of topic names, "
                f"got {type(self.topics).__name__}"
            )
        if not isinstance(self.topics, frozenset):
            object.__setattr__(self, "topics", frozenset(self.topics))
        owned = tuple(TopicPartition(*tp) for tp in self.owned_partitions)
        object.__setattr__(self, "owned_partitions", owned)


#: The assignment: member id -> partitions, one entry per member (possibly empty).
Plan = dict[str, list[TopicPartition]]

#: topic -> one set of replica racks per partition index (KIP-881 rack-aware assignors).
PartitionRacks = Mapping[str, Sequence[Set[str]]]


def java_string_key(text: str) -> bytes:
    """Sort key equal to Java's ``String.compareTo`` order (UTF-16 code units).

    Python compares code points; the two differ when a character above
    U+FFFF meets one in U+E000..U+FFFF. Member and instance ids are free text.
    """
    return text.encode("utf-16-be", "surrogatepass")


def java_member_key(member: Member) -> tuple[int, bytes, bytes]:
    """Java ``MemberInfo`` order: static members by instance id first, then dynamic by member id."""
    if member.group_instance_id is not None:
        return (0, java_string_key(member.group_instance_id), java_string_key(member.member_id))
    return (1, java_string_key(member.member_id), b"")


def check_input(
    members: Sequence[Member],
    partitions: Mapping[str, int],
    partition_racks: PartitionRacks | None = None,
) -> None:
    """Reject input no assignor can give a meaning to, naming the culprit."""
    seen: set[str] = set()
    for m in members:
        if not isinstance(m, Member):
            raise TypeError(f"assignor: members must be Member objects, got {type(m).__name__}")
        if m.member_id in seen:
            raise LocalProtocolError(
                f"assignor: member id {m.member_id!r} appears twice; member ids must be unique"
            )
        seen.add(m.member_id)
    for topic, count in partitions.items():
        if not isinstance(count, int) or isinstance(count, bool) or count < 0:
            raise LocalProtocolError(
                f"assignor: topic {topic!r} has partition count {count!r}; "
                "give a non-negative int per topic"
            )
    if partition_racks is not None:
        for topic, racks in partition_racks.items():
            expected = partitions.get(topic)
            if expected is not None and len(racks) != expected:
                raise LocalProtocolError(
                    f"assignor: topic {topic!r} has {expected} partitions "
                    f"but {len(racks)} rack sets; give one set of replica racks per partition"
                )


def check_plan(
    name: str,
    plan: Mapping[str, Sequence[TopicPartition]],
    members: Sequence[Member],
    partitions: Mapping[str, int],
) -> Plan:
    """Validate an assignor's answer and return it as a :data:`Plan`.

    Every member must appear; every partition must exist, belong to a topic
    its member subscribes to, and be given at most once. (Partitions may be
    left out: cooperative plans withhold partitions still being revoked.)
    """
    if not isinstance(plan, Mapping):
        raise LocalProtocolError(
            f"assignor {name!r} returned {type(plan).__name__}; "
            "return a dict member_id -> partitions"
        )
    by_id = {m.member_id: m for m in members}
    missing = by_id.keys() - plan.keys()
    unknown = plan.keys() - by_id.keys()
    if missing or unknown:
        raise LocalProtocolError(
            f"assignor {name!r}: plan members differ from the group "
            f"(missing {sorted(missing)}, unknown {sorted(unknown)}); give every member an entry"
        )
    owner: dict[TopicPartition, str] = {}
    result: Plan = {}
    for member_id, assigned in plan.items():
        member = by_id[member_id]
        out: list[TopicPartition] = []
        for raw in assigned:
            tp = TopicPartition(*raw)
            count = partitions.get(tp.topic)
            if count is None or not 0 <= tp.partition < count:
                raise LocalProtocolError(
                    f"assignor {name!r} gave {member_id!r} partition {tp_name(tp)}, "
                    "which does not exist"
                )
            if tp.topic not in member.topics:
                raise LocalProtocolError(
                    f"assignor {name!r} gave {member_id!r} partition {tp_name(tp)} "
                    f"of a topic it does not subscribe to"
                )
            if tp in owner:
                raise LocalProtocolError(
                    f"assignor {name!r} gave partition {tp_name(tp)} "
                    f"to both {owner[tp]!r} and {member_id!r}"
                )
            owner[tp] = member_id
            out.append(tp)
        result[member_id] = out
    return result
