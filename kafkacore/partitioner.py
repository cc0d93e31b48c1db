"""Producer partitioners: where a record goes, decided without I/O.

Theory of operation
-------------------
A partitioner answers one question per record: given the topic, the
serialized key (or ``None``), the topic's partition count and the partitions
whose leader is currently known ("available"), which partition?

* Keyed records go where the Java client puts them, so that mixed
  Java/Python producers keep per-key ordering: ``murmur2(key)`` with Kafka's
  seed ``0x9747b28c``, made positive with ``& 0x7fffffff``, modulo the
  partition count (``BuiltInPartitioner.partitionForKey``). Availability is
  deliberately ignored for keys: a key must not move when a leader blips.
* Unkeyed records use the uniform sticky partitioner (KIP-480, refined by
  KIP-794): stick to one partition until ``batch_size`` bytes were appended
  to it, then switch to another one chosen at random among the available
  partitions. Sticking fills batches, which is what makes unkeyed produce
  cheap. The per-topic choice is a tiny state machine (:class:`StickyState`).
  KIP-794's adaptive part is implemented too: when the accumulator reports
  queue sizes per partition (:meth:`DefaultPartitioner.update_load_stats`)
  the next partition is drawn with weights that favour short queues.
* :class:`RoundRobinPartitioner` spreads records over the available
  partitions one by one, keys ignored (Java's ``RoundRobinPartitioner``).
* :class:`FunctionPartitioner` wraps a user callable
  ``(topic, key_bytes, partitions_count, available) -> int``.

Randomness is injected (``random.Random``); the core never draws its own.
Every partitioner has the same two-call surface (:class:`Partitioner`):
``partition(...)`` before a record is appended and ``record_appended(...)``
after, so the producer does not need to know which one it drives.
"""

from __future__ import annotations

import bisect
import enum
import random
import struct
import sys
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Protocol

from kafkacore.records import _backend

if _backend.NATIVE:
    from kafkacore.records import _native

__all__ = [
    "DEFAULT_BATCH_SIZE",
    "DefaultPartitioner",
    "FunctionPartitioner",
    "Partitioner",
    "PartitionerFn",
    "RoundRobinPartitioner",
    "StickyState",
    "murmur2",
    "partition_for_key",
    "to_positive",
]

#: Java producer's ``batch.size`` default; also the sticky switch threshold.
DEFAULT_BATCH_SIZE = 16384

_MASK32 = 0xFFFFFFFF
_M = 0x5BD1E995  # murmur2 mixing constant
_SEED = 0x9747B28C  # Kafka's seed (Utils.murmur2), not the reference implementation's


# Short keys (the common case) are cheapest through one struct call with a
# cached format; long ones through a memoryview cast, which skips building a tuple.
_SHORT_WORDS = 16
_SHORT_FORMATS = tuple(struct.Struct(f"<{i}I").unpack_from for i in range(_SHORT_WORDS))
_NATIVE_LE = sys.byteorder == "little" and struct.calcsize("I") == 4


def _words(data: bytes | bytearray | memoryview, n4: int) -> Iterable[int]:
    """The first ``n4`` little-endian 32-bit words of ``data``."""
    if n4 < _SHORT_WORDS:
        return _SHORT_FORMATS[n4](data)
    if _NATIVE_LE:
        return memoryview(data)[: n4 * 4].cast("I")
    return struct.unpack_from(f"<{n4}I", data)


def murmur2_py(data: bytes | bytearray | memoryview) -> int:
    """Kafka's murmur2 of ``data`` as a signed 32-bit int (Java ``Utils.murmur2``).

    The pure-Python reference; :func:`murmur2` is the compiled one when the
    extension is active (kafkacore.records._backend), this one otherwise.

    Words are read little-endian, four bytes at a time; the 1-3 byte tail is
    folded in one step. Every product is reduced to 32 bits, as Java's int
    arithmetic does implicitly.
    """
    if type(data) is not bytes and not isinstance(data, bytearray):
        view = memoryview(data)
        data = view if view.format == "B" and view.ndim == 1 else view.cast("B")
    n = len(data)
    h = (_SEED ^ n) & _MASK32
    n4 = n >> 2
    if n4:
        for k in _words(data, n4):
            k = (k * _M) & _MASK32
            h = ((h * _M) ^ ((k ^ (k >> 24)) * _M)) & _MASK32
    tail = n & 3
    if tail:
        # The tail bytes occupy disjoint bit ranges, so Java's three XORs are
        # one little-endian integer.
        h = ((h ^ int.from_bytes(data[n - tail :], "little")) * _M) & _MASK32
    h ^= h >> 13
    h = (h * _M) & _MASK32
    h ^= h >> 15
    return h - 0x100000000 if h & 0x80000000 else h


#: Kafka's murmur2 of a bytes-like key as a signed 32-bit int (Java ``Utils.murmur2``).
murmur2: Callable[[bytes | bytearray | memoryview], int] = (
    _native.murmur2 if _backend.NATIVE else murmur2_py
)


def to_positive(number: int) -> int:
    """Java ``Utils.toPositive``: clear the sign bit (not ``abs``: MIN_VALUE maps to 0)."""
    return number & 0x7FFFFFFF


def partition_for_key(key: bytes | bytearray | memoryview, partitions_count: int) -> int:
    """The partition the Java client picks for a keyed record."""
    if partitions_count < 1:
        raise ValueError(
            f"partition_for_key: partitions_count must be >= 1, got {partitions_count}"
        )
    return to_positive(murmur2(key)) % partitions_count


#: User partitioner: ``(topic, key_bytes, partitions_count, available) -> partition``.
PartitionerFn = Callable[[str, bytes | None, int, Sequence[int]], int]


class Partitioner(Protocol):
    """What the producer drives: choose a partition, then report the append."""

    def partition(
        self, topic: str, key: bytes | None, partitions_count: int, available: Sequence[int]
    ) -> int:
        """Return the partition for a record about to be appended."""
        ...

    def record_appended(
        self, topic: str, partition: int, size: int, *, batch_ready: bool = True
    ) -> None:
        """Report that ``size`` bytes were appended to ``partition`` of ``topic``."""
        ...


def _check_layout(topic: str, partitions_count: int) -> None:
    if partitions_count < 1:
        raise ValueError(
            f"partitioner: topic {topic!r} has {partitions_count} partitions; "
            "wait for metadata before producing to it"
        )


class StickyState(enum.Enum):
    """State of one topic in the uniform sticky partitioner."""

    UNCHOSEN = "unchosen"  # no partition picked yet (first record, or after a switch)
    STUCK = "stuck"  # appending to one partition until batch_size bytes went there


@dataclass(slots=True)
class _TopicSticky:
    state: StickyState = StickyState.UNCHOSEN
    partition: int = -1
    produced: int = 0
    # KIP-794 load stats: cumulative weights and the partition each slot maps to.
    cumulative: list[int] = field(default_factory=list)
    partition_ids: list[int] = field(default_factory=list)


class DefaultPartitioner:
    """Java's built-in partitioner: murmur2 for keys, uniform sticky for the rest.

    ``batch_size`` is the number of bytes appended to a partition before the
    partitioner moves on (KIP-794 ties it to ``batch.size``). With
    ``ignore_keys`` keyed records are spread like unkeyed ones
    (``partitioner.ignore.keys``). ``adaptive`` enables weighting by queue
    size once :meth:`update_load_stats` is fed
    (``partitioner.adaptive.partitioning.enable``).
    """

    __slots__ = ("_adaptive", "_batch_size", "_ignore_keys", "_rng", "_topics")

    def __init__(
        self,
        *,
        rng: random.Random,
        batch_size: int = DEFAULT_BATCH_SIZE,
        ignore_keys: bool = False,
        adaptive: bool = True,
    ) -> None:
        if batch_size < 1:
            raise ValueError(f"DefaultPartitioner: batch_size must be >= 1, got {batch_size}")
        self._rng = rng
        self._batch_size = batch_size
        self._ignore_keys = ignore_keys
        self._adaptive = adaptive
        self._topics: dict[str, _TopicSticky] = {}

    def state(self, topic: str) -> tuple[StickyState, int, int]:
        """``(state, sticky partition or -1, bytes appended to it)`` of ``topic``."""
        t = self._topics.get(topic)
        if t is None or t.state is StickyState.UNCHOSEN:
            return (StickyState.UNCHOSEN, -1, 0)
        return (t.state, t.partition, t.produced)

    def partition(
        self, topic: str, key: bytes | None, partitions_count: int, available: Sequence[int]
    ) -> int:
        _check_layout(topic, partitions_count)
        if key is not None and not self._ignore_keys:
            return to_positive(murmur2(key)) % partitions_count
        t = self._topics.get(topic)
        if t is None:
            t = self._topics[topic] = _TopicSticky()
        if t.state is StickyState.STUCK and t.partition < partitions_count:
            return t.partition
        # UNCHOSEN (or the stuck partition vanished from metadata): pick one.
        t.partition = self._next_partition(t, partitions_count, available)
        t.produced = 0
        t.state = StickyState.STUCK
        return t.partition

    def record_appended(
        self, topic: str, partition: int, size: int, *, batch_ready: bool = True
    ) -> None:
        """Count bytes appended to the sticky partition; switch after ``batch_size``.

        ``batch_ready=False`` (the batch is still lingering) postpones the
        switch up to twice ``batch_size`` so a lingering batch is not cut
        into a small tail; Java does the same to avoid fractional batches.
        Appends to other partitions (keyed records) are ignored.
        """
        if size < 0:
            raise ValueError(f"record_appended: size must be >= 0, got {size}")
        t = self._topics.get(topic)
        if t is None or t.state is not StickyState.STUCK or t.partition != partition:
            return
        t.produced += size
        if (t.produced >= self._batch_size and batch_ready) or t.produced >= 2 * self._batch_size:
            t.state = StickyState.UNCHOSEN
            t.produced = 0

    def update_load_stats(
        self, topic: str, queue_sizes: Mapping[int, int], partitions_count: int
    ) -> None:
        """KIP-794: record queued batches per partition with a leader.

        ``queue_sizes`` maps partition id to the number of batches waiting;
        partitions without a leader (or excluded for latency) are left out.
        A partition with a shorter queue becomes proportionally more likely
        to be picked next (weight ``max + 1 - size``). Equal queues over the
        whole topic, or a topic with fewer than two partitions, fall back to
        the uniform choice, as in Java.
        """
        t = self._topics.get(topic)
        if t is None:
            t = self._topics[topic] = _TopicSticky()
        t.cumulative = []
        t.partition_ids = []
        if not self._adaptive or not queue_sizes or partitions_count < 2:
            return
        sizes = list(queue_sizes.values())
        if any(s < 0 for s in sizes):
            raise ValueError(f"update_load_stats: negative queue size for topic {topic!r}")
        top = max(sizes) + 1
        if len(set(sizes)) == 1 and len(sizes) == partitions_count:
            return
        running = 0
        for pid in sorted(queue_sizes):
            running += top - queue_sizes[pid]
            t.cumulative.append(running)
            t.partition_ids.append(pid)

    def _next_partition(
        self, t: _TopicSticky, partitions_count: int, available: Sequence[int]
    ) -> int:
        if t.cumulative:
            # Weighted draw: the first slot whose running sum exceeds the draw.
            draw = self._rng.randrange(t.cumulative[-1])
            return t.partition_ids[bisect.bisect_right(t.cumulative, draw)]
        if available:
            return available[self._rng.randrange(len(available))]
        # No leader known anywhere: any partition; the accumulator will wait for one.
        return self._rng.randrange(partitions_count)


class RoundRobinPartitioner:
    """One record per partition in turn over the available partitions, keys ignored."""

    __slots__ = ("_counters",)

    def __init__(self) -> None:
        self._counters: dict[str, int] = {}

    def partition(
        self, topic: str, key: bytes | None, partitions_count: int, available: Sequence[int]
    ) -> int:
        _check_layout(topic, partitions_count)
        n = self._counters.get(topic, 0)
        self._counters[topic] = n + 1
        if available:
            return available[n % len(available)]
        return n % partitions_count

    def record_appended(
        self, topic: str, partition: int, size: int, *, batch_ready: bool = True
    ) -> None:
        """Round robin does not depend on appended bytes."""


class FunctionPartitioner:
    """Adapt a user callable to :class:`Partitioner` and check what it returns."""

    __slots__ = ("_fn",)

    def __init__(self, fn: PartitionerFn) -> None:
        if not callable(fn):
            raise TypeError(f"FunctionPartitioner: expected a callable, got {type(fn).__name__}")
        self._fn = fn

    def partition(
        self, topic: str, key: bytes | None, partitions_count: int, available: Sequence[int]
    ) -> int:
        _check_layout(topic, partitions_count)
        result = self._fn(topic, key, partitions_count, available)
        if not isinstance(result, int) or isinstance(result, bool):
            raise TypeError(
                f"partitioner {self._fn!r} returned {type(result).__name__} for topic {topic!r}; "
                "it must return an int partition id"
            )
        if not 0 <= result < partitions_count:
            raise ValueError(
                f"partitioner {self._fn!r} returned partition {result} for topic {topic!r} "
                f"with {partitions_count} partitions; return a value in [0, {partitions_count})"
            )
        return result

    def record_appended(
        self, topic: str, partition: int, size: int, *, batch_ready: bool = True
    ) -> None:
        """User callables see every record in ``partition``; nothing to track."""
