"""The pure-Python record batch builder, the reference (see :mod:`kafkacore.records.builder`).

:class:`PyRecordBatchBuilder` encodes with the varint table of
:mod:`kafkacore.records._varint` and the pure CRC and codecs. It lives apart
from the shared surface so that a process on the compiled path loads none of
it (the table alone is about 0.3 MiB) unless a test or a benchmark builds a
batch the pure way: :mod:`kafkacore.records.builder` imports it at once when
the pure path is active (``KAFKACORE_PURE=1`` or no extension) and
otherwise on first use of the name ``PyRecordBatchBuilder``.
"""

from __future__ import annotations

import struct
from collections.abc import Iterable
from typing import Final

from kafkacore.errors import LocalProtocolError
from kafkacore.records._builder_base import (
    _ATTR,
    _INT32_MAX,
    _INT64_MAX,
    _INT64_MIN,
    _NO_HEADERS,
    _NULL,
    _OPEN,
    BuilderState,
    BytesLike,
    _as_bytes,
    _BuilderSurface,
    _check_args,
)
from kafkacore.records._crc import crc32c_py
from kafkacore.records._layout import (
    ATTR_CONTROL,
    ATTR_TIMESTAMP_TYPE,
    ATTR_TRANSACTIONAL,
    CRC_START,
    HEADER,
    LOG_OVERHEAD,
    RECORD_BATCH_OVERHEAD,
)
from kafkacore.records._varint import ZIGZAG, ZIGZAG_LIMIT, zigzag_bytes
from kafkacore.records.compression import Compression, compress_py
from kafkacore.records.model import Header

__all__ = ["PyRecordBatchBuilder"]

_CRC: Final = struct.Struct(">I")


def _encode_headers_py(headers: Iterable[Header]) -> bytes:
    parts = []
    count = 0
    for hkey, hvalue in headers:
        if not isinstance(hkey, str):
            raise TypeError(f"record header key must be str, not {type(hkey).__name__}")
        kb = hkey.encode("utf-8")
        parts.append(zigzag_bytes(len(kb)))
        parts.append(kb)
        if hvalue is None:
            parts.append(_NULL)
        else:
            hv = _as_bytes(hvalue, "header value")
            parts.append(zigzag_bytes(len(hv)))
            parts.append(hv)
        count += 1
    if not count:
        return _NO_HEADERS
    return zigzag_bytes(count) + b"".join(parts)


class PyRecordBatchBuilder(_BuilderSurface):
    """Accumulates records and builds one magic-2 batch (pure Python, the reference)."""

    __slots__ = (
        "_attributes",
        "_base_offset",
        "_base_sequence",
        "_base_ts",
        "_batch_size",
        "_buf",
        "_built",
        "_count",
        "_level",
        "_log_append_time",
        "_max_ts",
        "_partition_leader_epoch",
        "_producer_epoch",
        "_producer_id",
        "compression",
        "state",
    )

    def _headers_bytes(self, headers: Iterable[Header]) -> bytes:
        return _encode_headers_py(headers)

    def __init__(
        self,
        *,
        compression: Compression = Compression.NONE,
        compression_level: int | None = None,
        batch_size: int = 16384,
        producer_id: int = -1,
        producer_epoch: int = -1,
        base_sequence: int = -1,
        transactional: bool = False,
        base_offset: int = 0,
        partition_leader_epoch: int = -1,
        log_append_time: int | None = None,
    ) -> None:
        """Start an empty batch.

        ``batch_size`` is the limit :meth:`has_room_for` checks (the Java
        ``batch.size``, default 16384). ``transactional`` needs a producer id
        (KIP-98). ``log_append_time`` marks the batch LogAppendTime with that
        broker time, as a broker would; producers leave it None.
        """
        compression = _check_args(
            compression,
            compression_level,
            batch_size,
            producer_id,
            producer_epoch,
            base_sequence,
            transactional,
            base_offset,
            partition_leader_epoch,
            log_append_time,
        )
        self.compression = compression
        self._level = compression_level
        self._batch_size = batch_size
        self._producer_id = producer_id
        self._producer_epoch = producer_epoch
        self._base_sequence = base_sequence
        self._base_offset = base_offset
        self._partition_leader_epoch = partition_leader_epoch
        self._log_append_time = log_append_time
        attributes = int(compression)
        if transactional:
            attributes |= ATTR_TRANSACTIONAL
        if log_append_time is not None:
            attributes |= ATTR_TIMESTAMP_TYPE
        self._attributes = attributes
        # The header's room is reserved up front: an uncompressed batch is then
        # finished in place and copied once, at the end of build().
        self._buf = bytearray(RECORD_BATCH_OVERHEAD)
        self._count = 0
        self._base_ts = -1
        self._max_ts = -1
        self._built: bytes | None = None
        self.state = BuilderState.OPEN

    # ---- size checks --------------------------------------------------

    @property
    def record_count(self) -> int:
        return self._count

    @property
    def size_in_bytes(self) -> int:
        """Uncompressed size of the batch so far, header included."""
        return len(self._buf)

    def _mark_control(self) -> None:
        self._attributes |= ATTR_CONTROL

    # ---- appending ----------------------------------------------------

    def append(
        self,
        value: BytesLike | None,
        key: BytesLike | None = None,
        *,
        timestamp: int,
        headers: Iterable[Header] = (),
    ) -> int:
        """Append one record; returns its offset delta within the batch."""
        if self.state is not _OPEN:
            self._check_open()
        if type(timestamp) is not int or not _INT64_MIN <= timestamp <= _INT64_MAX:
            self._check_timestamp(timestamp)
        # Everything that can reject the record runs before any state changes.
        table = ZIGZAG
        if key is None:
            kh = _NULL
            key = b""
        else:
            if type(key) is not bytes:
                key = _as_bytes(key, "key")
            n = len(key)
            kh = table[n] if n < ZIGZAG_LIMIT else zigzag_bytes(n)
        if value is None:
            vh = _NULL
            value = b""
        else:
            if type(value) is not bytes:
                value = _as_bytes(value, "value")
            n = len(value)
            vh = table[n] if n < ZIGZAG_LIMIT else zigzag_bytes(n)
        hb = _encode_headers_py(headers) if headers else _NO_HEADERS
        index = self._count
        if index:
            d = timestamp - self._base_ts
            if 0 <= d < ZIGZAG_LIMIT:
                tb = table[d]
            else:
                self._check_timestamp(timestamp)
                tb = zigzag_bytes(d)
            if index >= ZIGZAG_LIMIT:
                if index >= _INT32_MAX:
                    raise LocalProtocolError(
                        "RecordBatchBuilder is full (2**31 - 1 records); start a new batch"
                    )
                ob = zigzag_bytes(index)
            else:
                ob = table[index]
            if timestamp > self._max_ts:
                self._max_ts = timestamp
        else:
            self._base_ts = self._max_ts = timestamp
            tb = ob = table[0]
        body = b"".join((_ATTR, tb, ob, kh, key, vh, value, hb))
        n = len(body)
        buf = self._buf
        buf += table[n] if n < ZIGZAG_LIMIT else zigzag_bytes(n)
        buf += body
        self._count = index + 1
        return index

    def _extend(
        self,
        values: list[bytes | None],
        keys: list[bytes | None],
        timestamps: list[int],
        headers: list[bytes],
        base_ts: int,
        max_ts: int,
    ) -> None:
        # All or nothing: on any failure the builder is left as it was.
        size = len(self._buf)
        try:
            self._encode_columns(values, keys, timestamps, headers, base_ts)
        except BaseException:
            del self._buf[size:]
            raise
        self._base_ts = base_ts
        self._max_ts = max_ts

    def _encode_columns(
        self,
        values: list[bytes | None],
        keys: list[bytes | None],
        timestamps: list[int],
        headers: list[bytes],
        base_ts: int,
    ) -> None:
        table = ZIGZAG
        limit = ZIGZAG_LIMIT
        slow = zigzag_bytes
        null = _NULL
        empty = b""
        attr = _ATTR
        join = b"".join
        index = self._count
        # Each record's body is joined once (its length prefix needs its
        # size); all records are joined once more at the end. Measured faster
        # than growing a bytearray piece by piece.
        out: list[bytes] = []
        for v, k, t, hb in zip(values, keys, timestamps, headers, strict=True):
            d = t - base_ts
            tb = table[d] if 0 <= d < limit else slow(d)
            ob = table[index] if index < limit else slow(index)
            if k is None:
                kh = null
                k = empty
            else:
                n = len(k)
                kh = table[n] if n < limit else slow(n)
            if v is None:
                vh = null
                v = empty
            else:
                n = len(v)
                vh = table[n] if n < limit else slow(n)
            body = join((attr, tb, ob, kh, k, vh, v, hb))
            n = len(body)
            out += (table[n] if n < limit else slow(n), body)
            index += 1
        self._buf += join(out)
        self._count = index

    # ---- building -----------------------------------------------------

    def build(self) -> bytes:
        """Finish the batch: compress, write the header and the CRC-32C. Idempotent."""
        if self._built is not None:
            return self._built
        if self.compression is Compression.NONE:
            out = self._buf
        else:
            # Released even if the codec fails, so the buffer can still grow.
            with memoryview(self._buf) as whole, whole[RECORD_BATCH_OVERHEAD:] as records:
                body = compress_py(self.compression, records, level=self._level)
            out = bytearray(RECORD_BATCH_OVERHEAD)
            out += body
        max_ts = self._max_ts if self._log_append_time is None else self._log_append_time
        HEADER.pack_into(
            out,
            0,
            self._base_offset,
            len(out) - LOG_OVERHEAD,
            self._partition_leader_epoch,
            2,
            0,
            self._attributes,
            self._count - 1,
            self._base_ts,
            max_ts,
            self._producer_id,
            self._producer_epoch,
            self._base_sequence,
            self._count,
        )
        _CRC.pack_into(out, 17, crc32c_py(memoryview(out)[CRC_START:]))
        self._built = bytes(out)
        self._buf = bytearray()
        self.state = BuilderState.BUILT
        return self._built
