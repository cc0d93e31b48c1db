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
from typing import Final, NamedTuple

from kafkacore.records._diagnose import diagnose as _diagnose
from kafkacore.records._diagnose import leftover as _leftover
from kafkacore.records._varint import read_zigzag
from kafkacore.records.model import Header, Record, RecordColumns

__all__ = ["EMPTY_HEADERS", "Section", "decode_columns", "iter_records"]

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


class Section(NamedTuple):
    """A records section ready for the loops, with the batch values they need.

    Built once per batch by :class:`~kafkacore.records.batch.RecordBatch`
    (CRC checked, inflated), so the loops start with the batch-level work done.
    """

    #: The records, uncompressed.
    buf: bytes
    #: ``recordsCount`` from the header.
    record_count: int
    base_offset: int
    base_timestamp: int
    #: ``maxTimestamp`` for a LOG_APPEND_TIME batch (every record has it), else None.
    fixed_timestamp: int | None
    #: Where ``buf`` starts in the batch, for error offsets; None once decompressed.
    offset_base: int | None


# How the loops read, without a call per field (keep both loops alike):
#
# * a varint of one or two bytes is decoded inline through _ZZ, a longer one
#   by read_zigzag; ``n, pos = zz[b], pos + 1`` stores the value and the
#   position past it in one step;
# * ``buf[pos : (pos := pos + n)]`` takes the n bytes of a key or value and
#   moves past them;
# * a record without headers ends right after its header count (zero); any
#   other ending (headers, or a length that disagrees with the fields) goes
#   through _read_headers, which also checks the record's end.
#
# Per record, decode_columns stores only what varies: offset deltas that are
# not the record's index (compaction gaps) and headers that are not empty are
# patched in afterwards, so the common record costs two list appends plus one
# for its timestamp delta.


def decode_columns(section: Section) -> RecordColumns:
    """Decode every record of ``section`` in one pass into parallel columns."""
    buf, count, offset_base = section.buf, section.record_count, section.offset_base
    zz, slow = _ZZ, read_zigzag
    keys: list[bytes | None] = []
    values: list[bytes | None] = []
    ts_deltas: list[int] = []
    odd_offsets: list[tuple[int, int]] = []
    with_headers: list[tuple[int, tuple[Header, ...]]] = []
    add_key, add_value, add_ts = keys.append, values.append, ts_deltas.append
    pos = 0
    try:
        for i in range(count):
            if (b := buf[pos]) < 0x80:  # length; then past the unused attributes byte
                end, pos = pos + 1 + zz[b], pos + 2
            elif (c := buf[pos + 1]) < 0x80:
                end, pos = pos + 2 + zz[(c << 7) + b - 0x80], pos + 3
            else:
                length, pos = slow(buf, pos, 5)
                end, pos = pos + length, pos + 1
            if (b := buf[pos]) < 0x80:  # timestampDelta
                ts_delta, pos = zz[b], pos + 1
            elif (c := buf[pos + 1]) < 0x80:
                ts_delta, pos = zz[(c << 7) + b - 0x80], pos + 2
            else:
                ts_delta, pos = slow(buf, pos, 10)
            if (b := buf[pos]) < 0x80:  # offsetDelta
                offset_delta, pos = zz[b], pos + 1
            elif (c := buf[pos + 1]) < 0x80:
                offset_delta, pos = zz[(c << 7) + b - 0x80], pos + 2
            else:
                offset_delta, pos = slow(buf, pos, 5)
            if offset_delta != i:
                odd_offsets.append((i, offset_delta))
            if (b := buf[pos]) < 0x80:  # keyLength
                n, pos = zz[b], pos + 1
            elif (c := buf[pos + 1]) < 0x80:
                n, pos = zz[(c << 7) + b - 0x80], pos + 2
            else:
                n, pos = slow(buf, pos, 5)
            if n >= 0:
                add_key(buf[pos : (pos := pos + n)])
            elif n == -1:
                add_key(None)
            else:
                raise ValueError
            if (b := buf[pos]) < 0x80:  # valueLength
                n, pos = zz[b], pos + 1
            elif (c := buf[pos + 1]) < 0x80:
                n, pos = zz[(c << 7) + b - 0x80], pos + 2
            else:
                n, pos = slow(buf, pos, 5)
            if n >= 0:
                add_value(buf[pos : (pos := pos + n)])
            elif n == -1:
                add_value(None)
            else:
                raise ValueError
            if pos + 1 != end or buf[pos]:
                with_headers.append((i, _read_headers(buf, pos, end)))
            pos = end
            add_ts(ts_delta)
        offsets, timestamps = _absolute_columns(section, ts_deltas, odd_offsets)
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


def iter_records(section: Section) -> Iterator[Record]:
    """Decode the records of ``section`` one per step, as :func:`decode_columns` does."""
    buf, count, base_offset, base_ts, fixed_ts, offset_base = section
    zz, slow, new, record_type, empty = _ZZ, read_zigzag, tuple.__new__, Record, EMPTY_HEADERS
    key: bytes | None
    value: bytes | None
    check_offsets, check_ts = _int64_checks(base_offset, base_ts, fixed_ts)
    pos = 0
    try:
        for _ in range(count):
            if (b := buf[pos]) < 0x80:  # length; then past the unused attributes byte
                end, pos = pos + 1 + zz[b], pos + 2
            elif (c := buf[pos + 1]) < 0x80:
                end, pos = pos + 2 + zz[(c << 7) + b - 0x80], pos + 3
            else:
                length, pos = slow(buf, pos, 5)
                end, pos = pos + length, pos + 1
            if (b := buf[pos]) < 0x80:  # timestampDelta
                ts_delta, pos = zz[b], pos + 1
            elif (c := buf[pos + 1]) < 0x80:
                ts_delta, pos = zz[(c << 7) + b - 0x80], pos + 2
            else:
                ts_delta, pos = slow(buf, pos, 10)
                check_ts = fixed_ts is None
            if (b := buf[pos]) < 0x80:  # offsetDelta
                offset_delta, pos = zz[b], pos + 1
            elif (c := buf[pos + 1]) < 0x80:
                offset_delta, pos = zz[(c << 7) + b - 0x80], pos + 2
            else:
                offset_delta, pos = slow(buf, pos, 5)
            if (check_offsets or check_ts) and not (
                _INT64_MIN <= base_offset + offset_delta <= _INT64_MAX
                and (fixed_ts is not None or _INT64_MIN <= base_ts + ts_delta <= _INT64_MAX)
            ):
                raise OverflowError
            if (b := buf[pos]) < 0x80:  # keyLength
                n, pos = zz[b], pos + 1
            elif (c := buf[pos + 1]) < 0x80:
                n, pos = zz[(c << 7) + b - 0x80], pos + 2
            else:
                n, pos = slow(buf, pos, 5)
            if n >= 0:
                key = buf[pos : (pos := pos + n)]
            elif n == -1:
                key = None
            else:
                raise ValueError
            if (b := buf[pos]) < 0x80:  # valueLength
                n, pos = zz[b], pos + 1
            elif (c := buf[pos + 1]) < 0x80:
                n, pos = zz[(c << 7) + b - 0x80], pos + 2
            else:
                n, pos = slow(buf, pos, 5)
            if n >= 0:
                value = buf[pos : (pos := pos + n)]
            elif n == -1:
                value = None
            else:
                raise ValueError
            hdrs = empty if pos + 1 == end and not buf[pos] else _read_headers(buf, pos, end)
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


def _int64_checks(base_offset: int, base_ts: int, fixed_ts: int | None) -> tuple[bool, bool]:
    """Whether iter_records must check each absolute offset, and each timestamp, against int64.

    decode_columns gets the check from ``array("q")``. Offset deltas are int32
    and fast-path timestamp deltas small, so only batches near the limits need
    it (and records with a slow-path timestamp delta, which the loop flags).
    """
    check_offsets = not (_INT64_MIN + 2**31 <= base_offset <= _INT64_MAX - 2**31)
    check_ts = fixed_ts is None and not (
        _INT64_MIN + _SMALL_DELTA <= base_ts <= _INT64_MAX - _SMALL_DELTA
    )
    return check_offsets, check_ts


def _absolute_columns(
    section: Section, ts_deltas: list[int], odd_offsets: list[tuple[int, int]]
) -> tuple[array[int], array[int]]:
    """The offsets and timestamps columns from what decode_columns kept per record.

    Raises OverflowError when a value leaves int64; the caller diagnoses it.
    """
    _, count, base_offset, base_ts, fixed_ts, _ = section
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
    return offsets, timestamps


def _read_headers(buf: bytes, pos: int, end: int) -> tuple[Header, ...]:
    """A record's headers, from their count at ``pos``; they must end the record at ``end``.

    Raises ValueError or IndexError on anything else (the loops diagnose it).
    """
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
    if pos != end:
        raise ValueError
    return tuple(out)
