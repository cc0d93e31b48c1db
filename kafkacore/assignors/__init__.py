"""Consumer-group partition assignors: pure functions behind a registry.

``get_assignor("range").assign(members, partitions)`` returns a plan,
``member_id -> [TopicPartition, ...]``. Built in, under Java's protocol
names: ``range``, ``roundrobin``, ``sticky`` and ``cooperative-sticky``;
add your own with :func:`register_assignor`. See ``docs/assignors.md``.
"""

from __future__ import annotations

from kafkacore.assignors._types import (
    DEFAULT_GENERATION,
    Member,
    PartitionRacks,
    Plan,
    RebalanceProtocol,
    TopicPartition,
)
from kafkacore.assignors.range import range_assign
from kafkacore.assignors.registry import (
    AssignFn,
    Assignor,
    UserDataFn,
    assignor_names,
    common_protocol,
    get_assignor,
    register_assignor,
    unregister_assignor,
)
from kafkacore.assignors.roundrobin import naive_allocator, roundrobin_assign
from kafkacore.assignors.sticky import (
    cooperative_sticky_assign,
    cooperative_sticky_user_data,
    sticky_assign,
    sticky_plan,
    sticky_user_data,
)
from kafkacore.assignors.userdata import (
    StickyUserData,
    decode_cooperative_user_data,
    decode_sticky_user_data,
    encode_cooperative_user_data,
    encode_sticky_user_data,
)

__all__ = [
    "DEFAULT_GENERATION",
    "AssignFn",
    "Assignor",
    "Member",
    "PartitionRacks",
    "Plan",
    "RebalanceProtocol",
    "StickyUserData",
    "TopicPartition",
    "UserDataFn",
    "assignor_names",
    "common_protocol",
    "cooperative_sticky_assign",
    "cooperative_sticky_user_data",
    "decode_cooperative_user_data",
    "decode_sticky_user_data",
    "encode_cooperative_user_data",
    "encode_sticky_user_data",
    "get_assignor",
    "naive_allocator",
    "range_assign",
    "register_assignor",
    "roundrobin_assign",
    "sticky_assign",
    "sticky_plan",
    "sticky_user_data",
    "unregister_assignor",
]
