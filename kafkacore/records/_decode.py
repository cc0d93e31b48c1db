"""The pure-Python record loops of a v2 batch: the reference decoder.

:class:`~kafkacore.records.batch.RecordBatch` runs these when the compiled
extension is not in use (``KAFKACORE_PURE=1``, or no extension). The batch
hands over its records section, already checked (CRC) and inflated, with the
batch-level values the loops need; two loops decode it:

* :func:`decode_columns`, every record in one pass into parallel columns;
* :func:`iter_records`, one :class:`~kafkacore.records.model.Record` per step.

Both assume well-formed input and run without per-field checks; any
exception inside them is handed to :func:`~kafkacore.records._diagnose.diagnose`,
which re-parses the records carefully and raises a precise DecodeError. Keep
the two loops in step with each other and with the diagnosis.
"""

from __future__ import annotations

from array import array
from collections.abc import Iterator
from typing import Final

from kafkacore.records._diagnose import diagnose as _diagnose
from kafkacore.records._diagnose import leftover as _leftover
from kafkacore.records._varint import read_zigzag
from kafkacore.records.model import Header, Record, RecordColumns

__all__ = ["EMPTY_HEADERS", "decode_columns", "iter_records"]

EMPTY_HEADERS: Final[tuple[Header, ...]] = ()
_INT64_MIN: Final = -(2**63)
_INT64_MAX: Final = 2**63 - 1
# A delta from a one- or two-byte varint is below 8192 in magnitude: base
# values this far from the int64 limits cannot overflow with one.
_SMALL_DELTA: Final = 8192
# Zigzag decode table for every one- and two-byte varint: _ZZ[z] where z is
# the varint's 7-bit groups put together (z = b for one byte, else
# (b2 << 7) + b - 0x80). 16 Ki small ints: cheaper than the arithmetic.
_ZZ: Final = tuple((z >> 1) ^ -(z & 1) for z in range(1 << 14))


def decode_columns(
    buf: bytes,
    count: int,
    base_offset: int,
    base_ts: int,
    fixed_ts: int | None,
    offset_base: int | None,
) -> RecordColumns:
    # Per record, only what varies is stored: offset deltas that are not the
    # record's index (compaction gaps) and headers that are not empty are
    # patched in afterwards, so the common record costs two list appends plus
    # one for its timestamp delta.
    zz = _ZZ
    slow = read_zigzag
    keys: list[bytes | None] = []
    values: list[bytes | None] = []
    ts_deltas: list[int] = []
    odd_offsets: list[tuple[int, int]] = []
    with_headers: list[tuple[int, tuple[Header, ...]]] = []
    add_key = keys.append
    add_value = values.append
    add_ts = ts_deltas.append
    pos = 0
    try:
        for i in range(count):
            b = buf[pos]
            if b < 0x80:
                end = pos + 1 + zz[b]
                pos += 2  # length and the unused attributes byte
            else:
                c = buf[pos + 1]
                if c < 0x80:
                    end = pos + 2 + zz[(c << 7) + b - 0x80]
                    pos += 3
                else:
                    length, pos = slow(buf, pos, 5)
                    end = pos + length
                    pos += 1
            b = buf[pos]
            if b < 0x80:
                ts_delta = zz[b]
                pos += 1
            else:
                c = buf[pos + 1]
                if c < 0x80:
                    ts_delta = zz[(c << 7) + b - 0x80]
                    pos += 2
                else:
                    ts_delta, pos = slow(buf, pos, 10)
            b = buf[pos]
            if b < 0x80:
                offset_delta = zz[b]
                pos += 1
            else:
                c = buf[pos + 1]
                if c < 0x80:
                    offset_delta = zz[(c << 7) + b - 0x80]
                    pos += 2
                else:
                    offset_delta, pos = slow(buf, pos, 5)
            if offset_delta != i:
                odd_offsets.append((i, offset_delta))
            b = buf[pos]
            if b < 0x80:
                n = zz[b]
                pos += 1
            else:
                c = buf[pos + 1]
                if c < 0x80:
                    n = zz[(c << 7) + b - 0x80]
                    pos += 2
                else:
                    n, pos = slow(buf, pos, 5)
            if n >= 0:
                add_key(buf[pos : pos + n])
                pos += n
            elif n == -1:
                add_key(None)
            else:
                raise ValueError
            b = buf[pos]
            if b < 0x80:
                n = zz[b]
                pos += 1
            else:
                c = buf[pos + 1]
                if c < 0x80:
                    n = zz[(c << 7) + b - 0x80]
                    pos += 2
                else:
                    n, pos = slow(buf, pos, 5)
            if n >= 0:
                add_value(buf[pos : pos + n])
                pos += n
            elif n == -1:
                add_value(None)
            else:
                raise ValueError
            if pos + 1 != end or buf[pos]:
                # Headers present, or the record length disagrees with its fields.
                if not buf[pos]:
                    raise ValueError
                hdrs, pos = _read_headers(buf, pos)
                if pos != end:
                    raise ValueError
                with_headers.append((i, hdrs))
            pos = end
            add_ts(ts_delta)
        if fixed_ts is None:
            timestamps = array("q", map(base_ts.__add__, ts_deltas))
        else:
            timestamps = array("q", (fixed_ts,)) * count
        try:
            offsets = array("q", range(base_offset, base_offset + count))
        except OverflowError:
            # The index-based guess left int64; only real offsets may do that.
            exact = list(range(base_offset, base_offset + count))
            for index, delta in odd_offsets:
                exact[index] = base_offset + delta
            offsets = array("q", exact)
        for index, delta in odd_offsets:
            offsets[index] = base_offset + delta
    except (IndexError, ValueError, OverflowError) as exc:
        raise _diagnose(buf, count, offset_base) from exc
    if pos != len(buf):
        raise _leftover(buf, pos, count, offset_base)
    headers = [EMPTY_HEADERS] * count
    for index, hdrs in with_headers:
        headers[index] = hdrs
    return RecordColumns(
        offsets=offsets, timestamps=timestamps, keys=keys, values=values, headers=headers
    )


def iter_records(
    buf: bytes,
    count: int,
    base_offset: int,
    base_ts: int,
    fixed_ts: int | None,
    offset_base: int | None,
) -> Iterator[Record]:
    # The same decoding as decode_columns, one record per step.
    zz = _ZZ
    slow = read_zigzag
    new = tuple.__new__
    record_type = Record
    empty = EMPTY_HEADERS
    key: bytes | None
    value: bytes | None
    # Absolute offsets and timestamps must stay int64, as in decode_columns.
    # Offset deltas are int32 and fast-path timestamp deltas small, so only
    # batches near the limits (or a slow-path timestamp) need the check.
    check_offsets = not (_INT64_MIN + 2**31 <= base_offset <= _INT64_MAX - 2**31)
    check_ts = fixed_ts is None and not (
        _INT64_MIN + _SMALL_DELTA <= base_ts <= _INT64_MAX - _SMALL_DELTA
    )
    pos = 0
    try:
        for _ in range(count):
            b = buf[pos]
            if b < 0x80:
                end = pos + 1 + zz[b]
                pos += 2
            else:
                c = buf[pos + 1]
                if c < 0x80:
                    end = pos + 2 + zz[(c << 7) + b - 0x80]
                    pos += 3
                else:
                    length, pos = slow(buf, pos, 5)
                    end = pos + length
                    pos += 1
            b = buf[pos]
            if b < 0x80:
                ts_delta = zz[b]
                pos += 1
            else:
                c = buf[pos + 1]
                if c < 0x80:
                    ts_delta = zz[(c << 7) + b - 0x80]
                    pos += 2
                else:
                    ts_delta, pos = slow(buf, pos, 10)
                    check_ts = fixed_ts is None
            b = buf[pos]
            if b < 0x80:
                offset_delta = zz[b]
                pos += 1
            else:
                c = buf[pos + 1]
                if c < 0x80:
                    offset_delta = zz[(c << 7) + b - 0x80]
                    pos += 2
                else:
                    offset_delta, pos = slow(buf, pos, 5)
            if (check_offsets or check_ts) and not (
                _INT64_MIN <= base_offset + offset_delta <= _INT64_MAX
                and (fixed_ts is not None or _INT64_MIN <= base_ts + ts_delta <= _INT64_MAX)
            ):
                raise OverflowError
            b = buf[pos]
            if b < 0x80:
                n = zz[b]
                pos += 1
            else:
                c = buf[pos + 1]
                if c < 0x80:
                    n = zz[(c << 7) + b - 0x80]
                    pos += 2
                else:
                    n, pos = slow(buf, pos, 5)
            if n >= 0:
                key = buf[pos : pos + n]
                pos += n
            elif n == -1:
                key = None
            else:
                raise ValueError
            b = buf[pos]
            if b < 0x80:
                n = zz[b]
                pos += 1
            else:
                c = buf[pos + 1]
                if c < 0x80:
                    n = zz[(c << 7) + b - 0x80]
                    pos += 2
                else:
                    n, pos = slow(buf, pos, 5)
            if n >= 0:
                value = buf[pos : pos + n]
                pos += n
            elif n == -1:
                value = None
            else:
                raise ValueError
            if pos + 1 != end or buf[pos]:
                if not buf[pos]:
                    raise ValueError
                hdrs, pos = _read_headers(buf, pos)
                if pos != end:
                    raise ValueError
            else:
                hdrs = empty
            pos = end
            yield new(
                record_type,
                (
                    base_offset + offset_delta,
                    base_ts + ts_delta if fixed_ts is None else fixed_ts,
                    key,
                    value,
                    hdrs,
                ),
            )
    except (IndexError, ValueError, OverflowError) as exc:
        raise _diagnose(buf, count, offset_base) from exc
    if pos != len(buf):
        raise _leftover(buf, pos, count, offset_base)


def _read_headers(buf: bytes, pos: int) -> tuple[tuple[Header, ...], int]:
    count, pos = read_zigzag(buf, pos, 5)
    if count < 0 or count * 2 > len(buf) - pos:
        raise ValueError
    out: list[Header] = []
    for _ in range(count):
        n, pos = read_zigzag(buf, pos, 5)
        if n < 0 or pos + n > len(buf):
            raise ValueError
        hkey = buf[pos : pos + n].decode("utf-8")
        pos += n
        n, pos = read_zigzag(buf, pos, 5)
        if n >= 0:
            if pos + n > len(buf):
                raise ValueError
            out.append((hkey, buf[pos : pos + n]))
            pos += n
        elif n == -1:
            out.append((hkey, None))
        else:
            raise ValueError
    return tuple(out), pos
