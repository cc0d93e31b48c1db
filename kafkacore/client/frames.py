"""Response frames cut from a connection's byte stream with at most one copy.

Theory of operation
-------------------
A Kafka response is a 4-byte size and that many bytes. The codec's
:class:`~kafkacore.protocol.framing.FrameReader` appends every read to one
buffer and slices each frame out of it into new ``bytes``: three copies of
every response (issue 12). :class:`FrameAssembler` does the same job with
at most one:

* a frame that lies whole inside one read is returned as a ``memoryview``
  of that read: no copy (the decoded response then keeps views of it, e.g.
  a Fetch's record batches);
* a frame spread over several reads keeps those reads as views, in a list,
  and joins them once when its last byte arrives: one copy. Memory grows
  with the bytes that actually arrived, never with what a size prefix
  claims (a hostile prefix allocates nothing).

Only immutable reads (``bytes``, or views of ``bytes``) are kept as views:
a transport may reuse a ``bytearray`` for its next read, so those bytes are
copied on arrival.

States (:class:`FrameState`)::

    SIZE --(4 bytes)--> BODY --(size bytes)--> SIZE
      \\--(size outside 0..max_frame_size)--> FAILED (for good)

The bound and the failure behave as the codec's reader: a size prefix
outside ``0..max_frame_size`` fails the stream; the frames completed before
it in the same call are returned and :attr:`FrameAssembler.error` is set
(raised at once when no frame came first, and by every later call).
"""

from __future__ import annotations

import enum
import struct

from kafkacore.errors import DecodeError

__all__ = ["FrameAssembler", "FrameState"]

_I32 = struct.Struct(">i")


class FrameState(enum.Enum):
    SIZE = "reading the 4-byte size"
    BODY = "reading the frame body"
    FAILED = "failed on a bad size prefix"


class FrameAssembler:
    """Split a byte stream into frame bodies; see the module docstring."""

    __slots__ = ("_head", "_need", "_parts", "_size", "error", "max_frame_size", "state")

    def __init__(self, *, max_frame_size: int) -> None:
        if max_frame_size < 0:
            raise ValueError(f"max_frame_size must be >= 0, got {max_frame_size}")
        self.max_frame_size = max_frame_size
        self.state = FrameState.SIZE
        #: Bytes of a size prefix split across reads (at most 3).
        self._head = b""
        #: Pieces of the body being assembled, and how many bytes it still needs.
        self._parts: list[memoryview] = []
        self._size = 0
        self._need = 0
        #: The DecodeError that failed the stream (None while it is sound).
        self.error: DecodeError | None = None

    @property
    def buffered(self) -> int:
        """Bytes received but not yet returned as a frame."""
        return len(self._head) + self._size - self._need if self._parts else len(self._head)

    def feed(self, data: bytes | bytearray | memoryview) -> list[memoryview]:
        """Add one read; return the frame bodies it completed, in order."""
        if self.error is not None:
            raise self.error
        view = memoryview(data)
        if view.format != "B" or view.ndim != 1:
            view = view.cast("B")
        if not view.readonly:
            view = memoryview(bytes(view))  # the transport may reuse its buffer
        frames: list[memoryview] = []
        pos, end = 0, len(view)
        while pos < end:
            if self.state is FrameState.BODY:
                take = min(self._need, end - pos)
                self._parts.append(view[pos : pos + take])
                pos += take
                self._need -= take
                if not self._need:
                    frames.append(memoryview(b"".join(self._parts)))
                    self._parts = []
                    self.state = FrameState.SIZE
                continue
            if self._head or end - pos < 4:
                take = min(4 - len(self._head), end - pos)
                self._head += view[pos : pos + take]
                pos += take
                if len(self._head) < 4:
                    break
                (size,) = _I32.unpack(self._head)
                self._head = b""
            else:
                (size,) = _I32.unpack_from(view, pos)
                pos += 4
            if size < 0 or size > self.max_frame_size:
                return self._fail(size, pos - 4, frames)
            if end - pos >= size:
                frames.append(view[pos : pos + size])  # whole in this read: no copy
                pos += size
            else:
                self._size = self._need = size
                self.state = FrameState.BODY
        return frames

    def _fail(self, size: int, offset: int, frames: list[memoryview]) -> list[memoryview]:
        self.error = DecodeError(
            f"frame size {size} outside 0..{self.max_frame_size}; "
            "the peer is not speaking Kafka or max_frame_size is too small",
            api="frame",
            offset=max(offset, 0),
        )
        self.state = FrameState.FAILED
        self._head = b""
        self._parts = []
        if frames:
            return frames
        raise self.error
