"""Size-prefixed frame reader with a hard bound.

Theory of operation
-------------------
Kafka frames every request and response as a 4-byte big-endian signed size
followed by that many bytes. :class:`FrameReader` accepts chunks of any size
(one byte included), and yields complete frame bodies. A size prefix that is
negative or above ``max_frame_bytes`` raises
:class:`~kafkacore.errors.RemoteProtocolError` before anything is allocated
for it, so a hostile or confused peer cannot make us reserve 2 GiB. After
such an error the reader is poisoned: the stream position is lost, and the
connection must be closed.
"""

from __future__ import annotations

from kafkacore.errors import LocalProtocolError, RemoteProtocolError

__all__ = ["FrameReader"]

_PREFIX = 4


class FrameReader:
    """Accumulates bytes and splits them into frame bodies."""

    __slots__ = ("_broken", "_buf", "_need", "max_frame_bytes")

    def __init__(self, max_frame_bytes: int) -> None:
        if max_frame_bytes <= 0:
            raise ValueError(f"FrameReader: max_frame_bytes must be > 0, got {max_frame_bytes}")
        self.max_frame_bytes = max_frame_bytes
        self._buf = bytearray()
        self._need: int | None = None  # body size of the frame being read
        self._broken = False

    @property
    def buffered(self) -> int:
        """Bytes held that do not yet form a complete frame."""
        return len(self._buf)

    def feed(self, data: bytes | bytearray | memoryview) -> list[bytes]:
        """Add ``data``; return the frame bodies it completed, in order."""
        if self._broken:
            raise LocalProtocolError(
                "FrameReader: stream is broken after a protocol error; close it"
            )
        buf = self._buf
        buf += data
        frames: list[bytes] = []
        pos = 0
        end = len(buf)
        while True:
            need = self._need
            if need is None:
                if end - pos < _PREFIX:
                    break
                need = int.from_bytes(buf[pos : pos + _PREFIX], "big", signed=True)
                if need < 0 or need > self.max_frame_bytes:
                    self._broken = True
                    raise RemoteProtocolError(
                        f"broker frame claims {need} bytes (limit {self.max_frame_bytes}); "
                        "closing the connection"
                    )
                pos += _PREFIX
                self._need = need
            if end - pos < need:
                break
            frames.append(bytes(buf[pos : pos + need]))
            pos += need
            self._need = None
        if pos:
            del buf[:pos]
        return frames
