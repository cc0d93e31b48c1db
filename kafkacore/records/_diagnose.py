"""The careful, slow decoder that names the fault in a v2 records section.

The pure record loops (:mod:`kafkacore.records._decode`) assume well-formed
input and run without per-field checks. When one of them fails, it hands the
records section here: :func:`diagnose` walks the records again from the start
with every check and describes the first fault (record index, field, byte
offset) in a :class:`~kafkacore.errors.DecodeError`. The compiled decoder
(``native/src/decode.rs``) runs the same checks in one pass and reports the
same texts; tests/native holds the two to that.
"""

from __future__ import annotations

from kafkacore.errors import DecodeError
from kafkacore.records._layout import API, MIN_RECORD_SIZE
from kafkacore.records._varint import read_zigzag

__all__ = ["diagnose", "leftover"]


class _Fail(Exception):
    """The first fault found: which field, at which byte, and why."""

    def __init__(self, field: str, pos: int, reason: str) -> None:
        self.field = field
        self.pos = pos
        self.reason = reason


def diagnose(buf: bytes, count: int, offset_base: int | None) -> DecodeError:
    """Walk the records again from the start with every check; describe the first fault.

    Runs only after a hot loop failed, so the hot loops need not remember
    where the failing record began. ``offset_base`` is where the records
    section starts in the batch (None when it was decompressed: then byte
    positions count within the decompressed records).
    """
    pos = 0
    index = 0
    try:
        for index in range(count):
            pos = _check_record(buf, pos, index, count)
    except _Fail as fail:
        return _error(fail.reason, f"records[{index}].{fail.field}", fail.pos, offset_base)
    # Every record is well formed, so a computed value left the int64 range.
    return _error("timestamp or offset overflows int64", "timestampDelta", 0, offset_base)


def leftover(buf: bytes, pos: int, count: int, offset_base: int | None) -> DecodeError:
    """The error for bytes after the last counted record."""
    reason = f"{len(buf) - pos} bytes left after the last of {count} records"
    return _error(reason, "recordsCount", pos, offset_base)


def _varint(buf: bytes, field: str, pos: int, max_bytes: int) -> tuple[int, int]:
    try:
        return read_zigzag(buf, pos, max_bytes)
    except IndexError:
        raise _Fail(field, pos, "truncated varint") from None
    except ValueError as exc:
        raise _Fail(field, pos, str(exc)) from None


def _nbytes(field: str, pos: int, n: int, limit: int) -> int:
    if n < -1:
        raise _Fail(field, pos, f"length {n} is negative")
    if n > 0 and pos + n > limit:
        raise _Fail(field, pos, f"length {n} runs past the record end")
    return pos + max(n, 0)


def _check_record(buf: bytes, start: int, index: int, count: int) -> int:
    """Check record ``index`` starting at ``start``; return where the next one starts."""
    if start >= len(buf):
        raise _Fail(
            "length",
            start,
            f"record count {count} but the records section ends after {index} records",
        )
    length, pos = _varint(buf, "length", start, 5)
    end = pos + length
    if length < MIN_RECORD_SIZE - 1 or end > len(buf):
        raise _Fail(
            "length",
            start,
            f"record length {length} does not fit the {len(buf) - pos} bytes left",
        )
    pos += 1
    _, pos = _varint(buf, "timestampDelta", pos, 10)
    _, pos = _varint(buf, "offsetDelta", pos, 5)
    n, p = _varint(buf, "keyLength", pos, 5)
    pos = _nbytes("key", p, n, end)
    n, p = _varint(buf, "valueLength", pos, 5)
    pos = _nbytes("value", p, n, end)
    pos = _check_headers(buf, pos, end)
    if pos != end:
        raise _Fail(
            "length",
            start,
            f"record length is {length} but its fields end {pos - end} bytes later",
        )
    return end


def _check_headers(buf: bytes, pos: int, end: int) -> int:
    """Check a record's headers starting at their count; return where they end."""
    hcount, p = _varint(buf, "headerCount", pos, 5)
    if hcount < 0 or hcount * 2 > end - p:
        raise _Fail("headerCount", pos, f"header count {hcount} does not fit the record")
    pos = p
    for h in range(hcount):
        n, p = _varint(buf, f"headers[{h}].keyLength", pos, 5)
        if n < 0:
            raise _Fail(f"headers[{h}].keyLength", pos, "header key must not be null")
        pos = _nbytes(f"headers[{h}].key", p, n, end)
        try:
            buf[p:pos].decode("utf-8")
        except UnicodeDecodeError:
            raise _Fail(f"headers[{h}].key", p, "header key is not valid UTF-8") from None
        n, p = _varint(buf, f"headers[{h}].valueLength", pos, 5)
        pos = _nbytes(f"headers[{h}].value", p, n, end)
    return pos


def _error(reason: str, field: str, pos: int, offset_base: int | None) -> DecodeError:
    if offset_base is None:
        return DecodeError(
            f"{reason} (at byte {pos} of the decompressed records)", api=API, field=field
        )
    return DecodeError(reason, api=API, field=field, offset=offset_base + pos)
