"""Who a consumer is in its group, handed to a transactional producer (KIP-447).

A consume-transform-produce loop commits its input offsets inside the
producer's transaction (``send_offsets_to_transaction``). Passing the
consumer's generation and member id lets the group coordinator fence a
zombie: a member that was kicked out of the group can no longer commit
offsets for partitions now owned by someone else.
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["ConsumerGroupMetadata"]


@dataclass(frozen=True, slots=True)
class ConsumerGroupMetadata:
    """A consumer's group identity at one moment (Java's ``groupMetadata()``).

    ``generation_id`` is the classic generation or the KIP-848 member epoch;
    -1 and an empty ``member_id`` when the consumer is not (yet) a member,
    which the coordinator accepts without fencing.
    """

    group_id: str
    generation_id: int = -1
    member_id: str = ""
    group_instance_id: str | None = None
    #: What the member was doing then: "unjoined", "rebalancing" or "stable"
    #: (joined and assigned), as kafka-python's ``MemberState``; the fencing
    #: ignores it.
    state: str = "unjoined"
