"""One incremental fetch session with one broker (KIP-227).

Theory of operation
-------------------
The first Fetch to a broker is *full*: session id 0, epoch 0 (which asks
the broker to create a session) and every partition we want. If the
answer carries a session id, later fetches are *incremental*: they send
the session id and the next epoch, only the partitions that are new or
whose fetch position changed, and list the ones we no longer want as
``forgotten``; the broker answers only for partitions with news. Any
failure, or FETCH_SESSION_ID_NOT_FOUND / INVALID_FETCH_SESSION_EPOCH,
drops the session and the next fetch is full again.

States (:class:`SessionState`): NONE (next fetch full, no session known),
OPEN (incremental), and a fetch in flight is remembered as ``pending`` so
the answer commits exactly what was asked.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass

from kafkacore.client.metadata import TopicPartition
from kafkacore.protocol.enums import ErrorCode

__all__ = ["FetchSession", "PartitionFetch", "SessionState"]

_INITIAL_EPOCH = 0
_MAX_EPOCH = 2**31 - 1
SESSION_ERRORS = frozenset(
    {ErrorCode.FETCH_SESSION_ID_NOT_FOUND, ErrorCode.INVALID_FETCH_SESSION_EPOCH}
)


@dataclass(frozen=True, slots=True)
class PartitionFetch:
    """What one partition's entry in a Fetch says."""

    fetch_offset: int
    current_leader_epoch: int
    last_fetched_epoch: int
    max_bytes: int


class SessionState(enum.Enum):
    NONE = "none"
    OPEN = "open"


class FetchSession:
    """KIP-227 session bookkeeping for one node; see the module docstring."""

    __slots__ = ("_pending", "epoch", "node_id", "sent", "session_id", "state")

    def __init__(self, node_id: int) -> None:
        self.node_id = node_id
        self.state = SessionState.NONE
        self.session_id = 0
        self.epoch = _INITIAL_EPOCH
        #: What the broker's session holds, as of the last answered fetch.
        self.sent: dict[TopicPartition, PartitionFetch] = {}
        self._pending: dict[TopicPartition, PartitionFetch] | None = None

    def build(
        self, wanted: dict[TopicPartition, PartitionFetch]
    ) -> tuple[int, int, dict[TopicPartition, PartitionFetch], list[TopicPartition]]:
        """(session id, epoch, partitions to send, partitions to forget) for ``wanted``."""
        self._pending = dict(wanted)
        if self.state is SessionState.NONE:
            return 0, _INITIAL_EPOCH, dict(wanted), []
        to_send = {tp: pf for tp, pf in wanted.items() if self.sent.get(tp) != pf}
        forgotten = [tp for tp in self.sent if tp not in wanted]
        return self.session_id, self.epoch, to_send, forgotten

    def on_response(self, error_code: int, session_id: int) -> None:
        """Record the broker's answer to the fetch built last."""
        pending, self._pending = self._pending, None
        if error_code != ErrorCode.NONE or pending is None:
            self.reset()
            return
        if self.state is SessionState.NONE:
            if session_id == 0:
                return  # the broker keeps no session (e.g. its cache is full): stay full
            self.state = SessionState.OPEN
            self.session_id = session_id
            self.epoch = 1
        else:
            self.epoch = 1 if self.epoch >= _MAX_EPOCH else self.epoch + 1
        self.sent = pending

    def reset(self) -> None:
        """Forget the session: the next fetch is full."""
        self.state = SessionState.NONE
        self.session_id = 0
        self.epoch = _INITIAL_EPOCH
        self.sent = {}
        self._pending = None
