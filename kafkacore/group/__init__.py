"""Consumer group membership: the classic protocol and KIP-848, as sans-IO machines.

See ``docs/consumer.md``. Both machines send through a
:class:`~kafkacore.group.base.Requester` and emit assignment events.
"""

from kafkacore.group.base import (
    GROUP_LANE,
    GroupEvent,
    GroupFailed,
    GroupFatalError,
    PartitionsAssigned,
    PartitionsLost,
    PartitionsRevoked,
    Requester,
    RevokeHook,
)
from kafkacore.group.classic import ClassicMember, ClassicState
from kafkacore.group.kip848 import Kip848Member, Kip848State

__all__ = [
    "GROUP_LANE",
    "ClassicMember",
    "ClassicState",
    "GroupEvent",
    "GroupFailed",
    "GroupFatalError",
    "Kip848Member",
    "Kip848State",
    "PartitionsAssigned",
    "PartitionsLost",
    "PartitionsRevoked",
    "Requester",
    "RevokeHook",
]
