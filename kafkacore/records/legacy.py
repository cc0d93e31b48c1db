"""Legacy message sets, magic 0 and 1 (read only; NOTES.md c.5).

Theory of operation
-------------------
Before Kafka 0.11 a partition's log was a sequence of *log entries*
``offset int64, size int32, message``. A message is ``crc uint32, magic,
attributes, [timestamp int64 if magic 1], key, value`` with int32-prefixed
nullable key and value. A compressed message is a *wrapper*: its value is the
compressed bytes of an inner message set whose messages are not compressed.

:class:`LegacyBatch` wraps one log entry and offers the same reading surface
as :class:`~kafkacore.records.batch.RecordBatch` (iteration, ``columns()``,
``next_offset``), so a fetch response that mixes old segments with v2
batches is read with one loop. Inner offsets: magic 0 stores absolute
offsets; magic 1 stores relative ones (0..n-1) and the wrapper carries the
absolute offset of the last inner message (a wrapper offset of 0, as in a
produce request, means "base 0"). With LogAppendTime (magic 1) inner records
take the wrapper's timestamp. CRC-32 (IEEE) over magic..end is checked on
read; a mismatch raises :class:`~kafkacore.records.model.CorruptRecordError`.
Kafka 4 writes no legacy data (KIP-724) but still serves old segments.
"""

from __future__ import annotations

import struct
import zlib
from array import array
from collections.abc import Iterator
from typing import Final

from kafkacore.errors import DecodeError
from kafkacore.records.compression import DEFAULT_MAX_DECOMPRESSED_SIZE, Compression, decompress
from kafkacore.records.model import CorruptRecordError, Header, Record, RecordColumns, TimestampType

__all__ = ["LegacyBatch"]

_ENTRY: Final = struct.Struct(">qiIbb")  # offset, size, crc, magic, attributes
_I32: Final = struct.Struct(">i")
_I64: Final = struct.Struct(">q")
LOG_OVERHEAD: Final = 12
#: crc + magic + attributes + key length + value length (+ timestamp for v1).
_MIN_MESSAGE: Final = {0: 14, 1: 22}
_EMPTY: Final[tuple[Header, ...]] = ()


class _Message:
    __slots__ = ("attributes", "crc", "crc_ok", "key", "magic", "offset", "timestamp", "value")

    def __init__(
        self,
        offset: int,
        magic: int,
        attributes: int,
        crc: int,
        crc_ok: bool,
        timestamp: int,
        key: bytes | None,
        value: bytes | None,
    ) -> None:
        self.offset = offset
        self.magic = magic
        self.attributes = attributes
        self.crc = crc
        self.crc_ok = crc_ok
        self.timestamp = timestamp
        self.key = key
        self.value = value


def _read_message(buf: memoryview, pos: int, api: str, base: int) -> tuple[_Message, int]:
    """Parse one log entry at ``pos``; ``base`` shifts reported offsets (for inner sets)."""
    end_all = len(buf)
    if pos + LOG_OVERHEAD + 6 > end_all:
        raise DecodeError("truncated log entry header", api=api, field="offset", offset=base + pos)
    offset, size, crc, magic, attributes = _ENTRY.unpack_from(buf, pos)
    if magic not in (0, 1):
        raise DecodeError(
            f"magic is {magic}, expected 0 or 1", api=api, field="magic", offset=base + pos + 16
        )
    api = f"MessageSet v{magic}"
    start = pos + LOG_OVERHEAD
    end = start + size
    if size < _MIN_MESSAGE[magic]:
        raise DecodeError(
            f"message size {size} is below the minimum {_MIN_MESSAGE[magic]}",
            api=api,
            field="size",
            offset=base + pos + 8,
        )
    if end > end_all:
        raise DecodeError(
            f"message size {size} exceeds the {end_all - start} bytes left",
            api=api,
            field="size",
            offset=base + pos + 8,
        )
    crc_ok = zlib.crc32(buf[start + 4 : end]) == crc
    p = start + 6
    timestamp = -1
    if magic == 1:
        (timestamp,) = _I64.unpack_from(buf, p)
        p += 8
    fields: list[bytes | None] = []
    for name in ("key", "value"):
        if p + 4 > end:
            raise DecodeError(f"truncated {name} length", api=api, field=name, offset=base + p)
        (n,) = _I32.unpack_from(buf, p)
        p += 4
        if n == -1:
            fields.append(None)
            continue
        if n < 0 or p + n > end:
            raise DecodeError(
                f"{name} length {n} runs past the message end",
                api=api,
                field=name,
                offset=base + p - 4,
            )
        fields.append(bytes(buf[p : p + n]))
        p += n
    if p != end:
        raise DecodeError(
            f"{end - p} bytes left inside the message after its value",
            api=api,
            field="size",
            offset=base + p,
        )
    return _Message(offset, magic, attributes, crc, crc_ok, timestamp, fields[0], fields[1]), end


class LegacyBatch:
    """One magic-0/1 log entry: a plain message or a compressed wrapper of many."""

    __slots__ = ("_check_crc", "_max_decompressed_size", "_msg", "_size")

    def __init__(
        self,
        buffer: bytes | bytearray | memoryview,
        *,
        max_decompressed_size: int = DEFAULT_MAX_DECOMPRESSED_SIZE,
        check_crc: bool = True,
    ) -> None:
        view = memoryview(buffer)
        if view.format != "B" or view.ndim != 1:
            view = view.cast("B")
        self._msg, self._size = _read_message(view, 0, "MessageSet", 0)
        self._max_decompressed_size = max_decompressed_size
        self._check_crc = check_crc
        if self._msg.attributes & 0x07 and self._msg.value is None:
            raise DecodeError(
                "compressed wrapper message has a null value", api=self._api, field="value"
            )

    @property
    def _api(self) -> str:
        return f"MessageSet v{self._msg.magic}"

    @property
    def magic(self) -> int:
        return self._msg.magic

    @property
    def size_in_bytes(self) -> int:
        return self._size

    @property
    def crc(self) -> int:
        return self._msg.crc

    def crc_valid(self) -> bool:
        return self._msg.crc_ok

    @property
    def attributes(self) -> int:
        return self._msg.attributes

    @property
    def compression(self) -> Compression:
        code = self._msg.attributes & 0x07
        if code > Compression.LZ4:
            raise DecodeError(
                f"compression codec {code} is not allowed before magic 2",
                api=self._api,
                field="attributes",
            )
        return Compression(code)

    @property
    def timestamp_type(self) -> TimestampType:
        if self._msg.magic == 1 and self._msg.attributes & 0x08:
            return TimestampType.LOG_APPEND_TIME
        return TimestampType.CREATE_TIME

    @property
    def last_offset(self) -> int:
        return self._msg.offset

    @property
    def next_offset(self) -> int:
        return self._msg.offset + 1

    is_control: Final = False
    is_transactional: Final = False
    producer_id: Final = -1
    producer_epoch: Final = -1
    base_sequence: Final = -1

    def __repr__(self) -> str:
        codec = self.compression.name.lower()
        return f"<LegacyBatch v{self.magic} last offset {self.last_offset} {codec}>"

    def _verify(self, msg: _Message, api: str) -> None:
        if self._check_crc and not msg.crc_ok:
            raise CorruptRecordError(
                f"CRC-32 mismatch at message offset {msg.offset};"
                " the message is corrupt, fetch it again",
                api=api,
                field="crc",
            )

    def __iter__(self) -> Iterator[Record]:
        msg = self._msg
        api = self._api
        self._verify(msg, api)
        if not msg.attributes & 0x07:
            yield Record(msg.offset, msg.timestamp, msg.key, msg.value, _EMPTY)
            return
        codec = self.compression
        assert msg.value is not None
        inner = memoryview(
            decompress(
                codec, msg.value, max_size=self._max_decompressed_size, magic=msg.magic, api=api
            )
        )
        messages: list[_Message] = []
        pos = 0
        while pos < len(inner):
            m, pos = _read_message(inner, pos, api, 0)
            if m.attributes & 0x07:
                raise DecodeError("inner message is compressed again", api=api, field="attributes")
            self._verify(m, api)
            messages.append(m)
        if not messages:
            raise DecodeError("compressed wrapper holds no message", api=api, field="value")
        # Magic 0 stores absolute inner offsets; a magic-1 wrapper at offset 0 was never
        # assigned one (a produce request), so its inner offsets count from 0.
        base = 0 if msg.magic == 0 or msg.offset == 0 else msg.offset - messages[-1].offset
        log_append = self.timestamp_type is TimestampType.LOG_APPEND_TIME
        for m in messages:
            yield Record(
                base + m.offset,
                msg.timestamp if log_append else m.timestamp,
                m.key,
                m.value,
                _EMPTY,
            )

    def records(self) -> list[Record]:
        return list(self)

    def columns(self) -> RecordColumns:
        records = self.records()
        try:
            offsets = array("q", [r.offset for r in records])
            timestamps = array("q", [r.timestamp for r in records])
        except OverflowError:
            raise DecodeError(
                "inner offsets put a record outside the int64 range", api=self._api, field="offset"
            ) from None
        return RecordColumns(
            offsets=offsets,
            timestamps=timestamps,
            keys=[r.key for r in records],
            values=[r.value for r in records],
            headers=[r.headers for r in records],
        )
