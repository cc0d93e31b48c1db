"""Offset ranges: how a read is cut into Spark tasks, and how much a trigger reads.

Theory of operation
-------------------
Pure functions over offsets (no I/O, no clock: the clock comes in as an
argument), with the JVM connector's semantics so the same options give the
same tasks and micro-batches:

* :func:`split_ranges` (``KafkaOffsetRangeCalculator.getRanges``): one task per
  partition with data, unless ``maxRecordsPerPartition`` cuts a range into
  ``ceil(size / max)`` pieces, or ``minPartitions`` asks for more tasks than
  there are ranges: then every range gets ``max(round(size / total * min), 1)``
  pieces (rounded half up, as Java's ``Math.round``), computed over the ranges
  that are split at all. Pieces are as even as integer division allows, the
  last one taking the remainder. Empty ranges are dropped.
* :func:`plan_batch_ranges`: a batch read keeps ``earliest``/``latest`` as -2/-1
  so executors bind them when they read (data may age out in between);
  only when ranges must be split are both ends resolved, split, and the
  outer ends put back unresolved.
* :func:`stream_ranges` (``getOffsetRangesFromResolvedOffsets``): new
  partitions start at their earliest offset (data loss when that is not 0),
  vanished partitions and offsets that went backwards are data loss.
* :func:`rate_limit`: ``maxOffsetsPerTrigger`` shared among partitions in
  proportion to their backlog (a share below one record rounds up to one,
  others round down).
* :class:`TriggerDelay`: ``minOffsetsPerTrigger`` holds a micro-batch back
  until enough records arrived or ``maxTriggerDelay`` passed since the last
  batch it let through (the first is never held).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass

from kafkacore.client import TopicPartition

__all__ = [
    "OffsetRange",
    "TriggerDelay",
    "plan_batch_ranges",
    "rate_limit",
    "split_ranges",
    "stream_ranges",
]


@dataclass(frozen=True, slots=True)
class OffsetRange:
    """Offsets ``[from_offset, until_offset)`` of one partition (-2/-1: unresolved)."""

    topic: str
    partition: int
    from_offset: int
    until_offset: int

    @property
    def tp(self) -> TopicPartition:
        return TopicPartition(self.topic, self.partition)

    @property
    def size(self) -> int:
        """Estimated records (offsets may hold markers or be compacted away)."""
        return self.until_offset - self.from_offset


def _divide(parts: int, rng: OffsetRange) -> list[OffsetRange]:
    remaining = rng.size
    start = rng.from_offset
    out: list[OffsetRange] = []
    for part in range(parts):
        this = remaining // (parts - part)
        remaining -= this
        end = min(start + this, rng.until_offset)
        out.append(OffsetRange(rng.topic, rng.partition, start, end))
        start = end
    return out


def _part_count(size: int, total: int, min_parts: int) -> int:
    return max(math.floor(size / total * min_parts + 0.5), 1)


def split_ranges(
    ranges: Iterable[OffsetRange],
    *,
    min_partitions: int | None,
    max_records_per_partition: int | None,
) -> list[OffsetRange]:
    """Cut ``ranges`` into task ranges; see the module docstring."""
    kept = [r for r in ranges if r.size > 0]
    if (min_partitions is None or len(kept) >= min_partitions) and (
        max_records_per_partition is None
    ):
        return kept
    if max_records_per_partition is not None:
        most = max_records_per_partition
        divided = [
            piece for r in kept for piece in _divide(math.ceil(r.size / most), r) if piece.size > 0
        ]
    else:
        divided = kept
    if min_partitions is None or min_partitions <= len(divided):
        return divided
    total = sum(r.size for r in divided)
    unsplit = [r for r in divided if _part_count(r.size, total, min_partitions) == 1]
    unsplit_tps = {r.tp for r in unsplit}
    split_total = total - sum(r.size for r in unsplit)
    split_min = max(min_partitions - len(unsplit), 1)
    out: list[OffsetRange] = []
    for r in divided:
        parts = 1 if r.tp in unsplit_tps else _part_count(r.size, split_total, split_min)
        out.extend(piece for piece in _divide(parts, r) if piece.size > 0)
    return out


def plan_batch_ranges(
    start: Mapping[TopicPartition, int],
    end: Mapping[TopicPartition, int],
    *,
    min_partitions: int | None,
    max_records_per_partition: int | None,
    resolve: Callable[[Mapping[TopicPartition, int]], Mapping[TopicPartition, int]],
) -> list[OffsetRange]:
    """Task ranges of a batch read from per-partition bounds that may be -2/-1.

    ``resolve`` binds -2/-1 to the partition's current earliest/latest
    offsets; it is called only when ranges must be split.
    """
    if set(start) != set(end):
        raise ValueError(
            f"different partitions for the starting ({sorted(start)}) and ending "
            f"({sorted(end)}) offsets; were partitions added while planning? Run it again"
        )
    base = [OffsetRange(tp.topic, tp.partition, start[tp], end[tp]) for tp in sorted(end)]
    for r in base:
        if r.from_offset > r.until_offset and r.from_offset >= 0 and r.until_offset >= 0:
            raise ValueError(
                f"{r.topic}-{r.partition}: the starting offset {r.from_offset} is after the "
                f"ending offset {r.until_offset}; check startingOffsets/endingOffsets (or the "
                "timestamps they came from)"
            )
    big = max_records_per_partition if max_records_per_partition is not None else math.inf
    if not (
        (min_partitions is not None and min_partitions > len(base))
        or any(r.size > big for r in base)
    ):
        return base
    first = resolve(start)
    last = resolve(end)
    resolved = [OffsetRange(r.topic, r.partition, first[r.tp], last[r.tp]) for r in base]
    pieces: dict[TopicPartition, list[OffsetRange]] = {}
    for piece in split_ranges(
        resolved,
        min_partitions=min_partitions,
        max_records_per_partition=max_records_per_partition,
    ):
        pieces.setdefault(piece.tp, []).append(piece)
    out: list[OffsetRange] = []
    for tp, parts in pieces.items():
        if len(parts) == 1:
            out.append(OffsetRange(tp.topic, tp.partition, start[tp], end[tp]))
            continue
        head, tail = parts[0], parts[-1]
        out.append(OffsetRange(tp.topic, tp.partition, start[tp], head.until_offset))
        out.extend(parts[1:-1])
        out.append(OffsetRange(tp.topic, tp.partition, tail.from_offset, end[tp]))
    return out


def stream_ranges(
    start: Mapping[TopicPartition, int],
    end: Mapping[TopicPartition, int],
    new_partition_starts: Mapping[TopicPartition, int],
    *,
    report_data_loss: Callable[[str], None],
    min_partitions: int | None,
    max_records_per_partition: int | None,
) -> list[OffsetRange]:
    """Task ranges of one micro-batch between two resolved offsets.

    ``new_partition_starts`` holds the earliest offsets of the partitions in
    ``end`` but not in ``start`` (those it lacks were deleted meanwhile).
    ``report_data_loss`` raises or logs, per ``failOnDataLoss``.
    """
    new = set(end) - set(start)
    missing = new - set(new_partition_starts)
    if missing:
        report_data_loss(
            f"cannot find the earliest offsets of new partitions {_names(missing)}; they were "
            "deleted: some data may have been missed"
        )
    for tp, offset in sorted(new_partition_starts.items()):
        if offset != 0:
            report_data_loss(
                f"added partition {tp.topic}-{tp.partition} starts at offset {offset} instead "
                "of 0: some data may have been missed"
            )
    gone = set(start) - set(end)
    if gone:
        report_data_loss(f"partitions {_names(gone)} are gone: some data may have been missed")
    firsts = {**start, **new_partition_starts}
    ranges: list[OffsetRange] = []
    for tp in sorted(end):
        if tp not in firsts:
            continue
        first, last = firsts[tp], end[tp]
        if last < first:
            report_data_loss(
                f"partition {tp.topic}-{tp.partition}'s offset went from {first} back to "
                f"{last}: the start offset is beyond the available offsets, or the topic was "
                "deleted and created again"
            )
        ranges.append(OffsetRange(tp.topic, tp.partition, first, last))
    return split_ranges(
        ranges, min_partitions=min_partitions, max_records_per_partition=max_records_per_partition
    )


def rate_limit(
    limit: int,
    start: Mapping[TopicPartition, int],
    until: Mapping[TopicPartition, int],
    new_partition_starts: Mapping[TopicPartition, int],
) -> dict[TopicPartition, int]:
    """End offsets reading about ``limit`` records from ``start`` towards ``until``."""
    sizes: dict[TopicPartition, int] = {}
    for tp, end in until.items():
        begin = start.get(tp, new_partition_starts.get(tp))
        if begin is not None and end - begin > 0:
            sizes[tp] = end - begin
    total = float(sum(sizes.values()))
    if total < 1:
        return dict(until)
    out: dict[TopicPartition, int] = {}
    for tp, end in until.items():
        size = sizes.get(tp)
        if size is None:
            out[tp] = end
            continue
        begin = start[tp] if tp in start else new_partition_starts[tp]
        share = limit * (size / total)
        whole = math.ceil(share) if share < 1 else math.floor(share)
        out[tp] = min(end, begin + whole)
    return out


class TriggerDelay:
    """``minOffsetsPerTrigger`` with ``maxTriggerDelay`` (times in ms, given by the caller)."""

    def __init__(self, min_records: int, max_delay_ms: int) -> None:
        self.min_records = min_records
        self.max_delay_ms = max_delay_ms
        self.last_trigger_ms = 0

    def hold(
        self, start: Mapping[TopicPartition, int], latest: Mapping[TopicPartition, int], now_ms: int
    ) -> bool:
        """True when the next micro-batch should wait for more records."""
        if now_ms - self.last_trigger_ms >= self.max_delay_ms:
            self.last_trigger_ms = now_ms
            return False
        available = sum(end - start.get(tp, 0) for tp, end in latest.items())
        if available < self.min_records:
            return True
        self.last_trigger_ms = now_ms
        return False


def _names(tps: Iterable[TopicPartition]) -> str:
    return "[" + ", ".join(f"{tp.topic}-{tp.partition}" for tp in sorted(tps)) + "]"
