"""Executor side: read one offset range of one partition as Arrow record batches.

Theory of operation
-------------------
A Spark task reads ``[from, until)`` of one partition
(:class:`~pyspark_kafkacore._ranges.OffsetRange`) with a kafkacore
:class:`~kafkacore.transports.selector.KafkaConsumer` (no group, ``auto_offset_reset``
"none"), through the columnar path: ``poll_batches`` hands out
:class:`~kafkacore.consumer.PartitionBatch` columns, cut at ``until`` and
turned into ``pyarrow.RecordBatch``es by :func:`~pyspark_kafkacore._arrow.record_batch`.
Offsets -2/-1 (a batch read's earliest/latest) are bound here, when the
task runs, as the connector binds them.

The read is done when the consumer's position reaches ``until``. The
position moves past offsets that hold no record for us (transaction
markers, aborted records under ``read_committed``, compacted records), so
such gaps are never mistaken for data loss. Data loss is what the broker
says it is: a fetch position below the log start (retention, DeleteRecords)
or beyond the log end comes back OFFSET_OUT_OF_RANGE, which the consumer
raises as :class:`~kafkacore.consumer.NoOffsetForPartitionError`. Then the
available range is looked up: with ``failOnDataLoss`` the task fails with
:class:`DataLossError` naming the lost offsets, without it a warning is
logged and the read goes on from the earliest offset still there (or stops
when nothing of the range is left), as the connector's
``KafkaDataConsumer`` does. No progress for ``kafkaConsumer.pollTimeoutMs``
checks the same range and, when nothing is lost, fails the task with a
timeout. Brokers that cannot be reached (a restart, a network cut; the
consumer raises ``NoBrokersAvailable``, at once when it never reached
them) are waited for within that same bound, as the Java consumer waits
in ``poll``: the read goes on from its next offset with a fresh consumer,
so a broker down for a few seconds fails no task.

Consumers are kept in a small per-process pool keyed by their options, so
the tasks of later micro-batches in a reused Python worker skip the
connection and metadata start-up (the connector pools its consumers too).
"""

from __future__ import annotations

import bisect
import logging
import threading
import time
from collections.abc import Iterator, Mapping
from typing import Any

from kafkacore.client import TopicPartition
from kafkacore.consumer import LogTruncationError, NoOffsetForPartitionError, PartitionBatch
from kafkacore.errors import KafkaConnectionError
from kafkacore.transports.selector import KafkaConsumer

from ._arrow import record_batch_of
from ._offsets import EARLIEST, LATEST
from ._ranges import OffsetRange

__all__ = ["DataLossError", "FetchTimeoutError", "read_range"]

_log = logging.getLogger("pyspark_kafkacore")

#: Idle consumers kept per process (each holds sockets and a loop thread).
POOL_SIZE = 4
#: Poll step: how often a read that gets no records looks at its position.
_STEP_S = 0.05
#: Pause before a fresh consumer tries brokers that could not be reached.
_RECONNECT_S = 1.0
#: A bigger per-partition fetch than the Java default (1 MiB) unless the user sets
#: ``kafka.max.partition.fetch.bytes``: fewer round trips per task, each decoded at once.
DEFAULT_MAX_PARTITION_FETCH_BYTES = 8 * 1024 * 1024
#: A task reads offsets known to exist, so the broker never needs to hold a fetch
#: for new data, except the one sent when the range is done: with Java's 500 ms
#: that fetch would hold up the consumer's next task (one fetch per broker in flight).
DEFAULT_FETCH_MAX_WAIT_MS = 50

_pool: list[tuple[tuple[tuple[str, Any], ...], KafkaConsumer]] = []
_pool_lock = threading.Lock()


class DataLossError(RuntimeError):
    """Offsets of the range were deleted before they were read (``failOnDataLoss``)."""


class FetchTimeoutError(TimeoutError):
    """No record and no progress for ``kafkaConsumer.pollTimeoutMs``."""


def _key(kafka: Mapping[str, Any]) -> tuple[tuple[str, Any], ...]:
    # Queries differ in client.id only (named after their group id): a worker's
    # idle consumer serves the next query with the same settings, which spares
    # that query the consumer's start-up (a pooled consumer keeps its first name).
    return tuple(sorted((k, repr(v)) for k, v in kafka.items() if k != "client_id"))


def _borrow(kafka: Mapping[str, Any]) -> KafkaConsumer:
    key = _key(kafka)
    with _pool_lock:
        for i, (k, consumer) in enumerate(_pool):
            if k == key:
                del _pool[i]
                return consumer
    options = dict(kafka)
    options.setdefault("max_partition_fetch_bytes", DEFAULT_MAX_PARTITION_FETCH_BYTES)
    options.setdefault("fetch_max_wait_ms", DEFAULT_FETCH_MAX_WAIT_MS)
    return KafkaConsumer(**options, auto_offset_reset="none", enable_auto_commit=False)


def _give_back(kafka: Mapping[str, Any], consumer: KafkaConsumer) -> None:
    # Unassigned while idle: no fetching past the range into a buffer nobody reads.
    consumer.assign([])
    with _pool_lock:
        _pool.append((_key(kafka), consumer))
        extra = _pool[:-POOL_SIZE] if len(_pool) > POOL_SIZE else []
        del _pool[: len(extra)]
    for _, old in extra:
        old.close(timeout=2.0, autocommit=False)


def read_range(
    rng: OffsetRange,
    *,
    kafka: Mapping[str, Any],
    poll_timeout_ms: int,
    fail_on_data_loss: bool,
    include_headers: bool,
) -> Iterator[Any]:
    """Yield ``pyarrow.RecordBatch``es of the records in ``rng`` (see the module docstring)."""
    reader = _RangeRead(_borrow(kafka), rng, poll_timeout_ms, fail_on_data_loss, include_headers)
    clean = False
    try:
        while True:
            try:
                yield from reader.batches()
                break
            except KafkaConnectionError as exc:
                # No broker reachable (a broker restart, a network cut): a fresh
                # consumer goes on from the next offset once one answers again.
                reader.unreachable(exc)
                reader.consumer.close(timeout=2.0, autocommit=False)
                time.sleep(_RECONNECT_S)
                reader.consumer = _borrow(kafka)
        clean = True
    finally:
        if clean:
            _give_back(kafka, reader.consumer)
        else:
            reader.consumer.close(timeout=2.0, autocommit=False)


class _RangeRead:
    def __init__(
        self,
        consumer: KafkaConsumer,
        rng: OffsetRange,
        poll_timeout_ms: int,
        fail_on_data_loss: bool,
        include_headers: bool,
    ) -> None:
        self.consumer = consumer
        self.tp = TopicPartition(rng.topic, rng.partition)
        self.rng = rng
        self.poll_timeout_s = poll_timeout_ms / 1000
        self.fail_on_data_loss = fail_on_data_loss
        self.include_headers = include_headers
        self.spurious = 0
        #: The next offset to hand out (None until the range's bounds are bound).
        self.next: int | None = None
        self.until = rng.until_offset
        self.last_progress = time.monotonic()

    def _available(self) -> tuple[int, int]:
        c, tp = self.consumer, self.tp
        first = c.beginning_offsets([tp]).get(tp)
        last = c.end_offsets([tp]).get(tp)
        if first is None or last is None:
            raise RuntimeError(f"{tp.topic}-{tp.partition}: no offsets (was it deleted?)")
        return first, last

    def _seek(self, offset: int) -> None:
        c, tp = self.consumer, self.tp
        c.assign([tp])
        c.seek(tp, offset)

    def unreachable(self, exc: KafkaConnectionError) -> None:
        """Raise once no broker answered for ``kafkaConsumer.pollTimeoutMs``."""
        if time.monotonic() - self.last_progress <= self.poll_timeout_s:
            _log.warning("%s-%d: %s; trying again", self.tp.topic, self.tp.partition, exc)
            return
        raise FetchTimeoutError(
            f"cannot fetch {self.tp.topic}-{self.tp.partition} from offset {self.next}: no "
            f"broker answered in {self.poll_timeout_s:g} s (option "
            f"'kafkaConsumer.pollTimeoutMs'); last error: {exc}"
        ) from exc

    def batches(self) -> Iterator[Any]:
        """The batches from :attr:`next` to the end; may be called again after a failure."""
        if self.next is None:
            start, until = self.rng.from_offset, self.rng.until_offset
            if start < 0 or until < 0:
                first, last = self._available()
                start = first if start == EARLIEST else start
                until = last if until == LATEST else until
            self.next, self.until = start, until
        if self.next >= self.until:
            return
        self._seek(self.next)
        until = self.until
        c, tp = self.consumer, self.tp
        while self.next < until:
            try:
                got = c.poll_batches(timeout=_STEP_S, max_records=until - self.next)
            except (NoOffsetForPartitionError, LogTruncationError) as exc:
                self.next = self._out_of_range(self.next, until, exc)
                self.last_progress = time.monotonic()
                continue
            pieces: list[tuple[PartitionBatch, int]] = []
            nxt = self.next
            for batch in got:
                offsets = batch.offsets
                if offsets[0] < nxt:
                    raise RuntimeError(
                        f"{tp.topic}-{tp.partition}: asked for offset {nxt}, got {offsets[0]}"
                    )
                stop = bisect.bisect_left(offsets, until)
                if stop:
                    pieces.append((batch, stop))
                    nxt = offsets[stop - 1] + 1
                if stop < len(offsets):
                    nxt = until
                    break
            if pieces:
                self.next = nxt
                self.last_progress = time.monotonic()
                yield record_batch_of(pieces, self.include_headers)
            if nxt >= until:
                break
            self._check_position(nxt, until)

    def _check_position(self, nxt: int, until: int) -> None:
        position = self.consumer.position(self.tp, timeout=self.poll_timeout_s)
        if position > nxt:
            # Offsets without a record for us: markers, aborted, compacted.
            self.next = min(position, until)
            self.last_progress = time.monotonic()
        elif time.monotonic() - self.last_progress > self.poll_timeout_s:
            self.next = self._stalled(nxt, until)
            self.last_progress = time.monotonic()

    def _lost(self, first: int, end: int, why: str) -> None:
        tp = self.tp
        message = (
            f"offsets [{first}, {end}) of {tp.topic}-{tp.partition} are no longer in Kafka "
            f"({why}) and were not read"
        )
        if self.fail_on_data_loss:
            raise DataLossError(
                message + "; set the option 'failOnDataLoss' to false to skip lost offsets"
            )
        _log.warning("%s; failOnDataLoss is false, skipping them", message)

    def _recover(self, nxt: int, until: int, why: str) -> int | None:
        """Where to go on after ``nxt`` failed; None when ``nxt`` is still available."""
        first, last = self._available()
        if nxt < first:
            end = min(first, until)
            self._lost(nxt, end, why)
            if end >= until:
                return until
            self._seek(first)
            return first
        if nxt >= last:
            self._lost(nxt, until, f"{why}; the log now ends at {last}")
            return until
        return None

    def _out_of_range(self, nxt: int, until: int, exc: Exception) -> int:
        resumed = self._recover(nxt, until, "deleted by retention or DeleteRecords")
        if resumed is not None:
            return resumed
        # In range again (e.g. a leader change answered out of range for a moment).
        self.spurious += 1
        if self.spurious > 5:
            raise RuntimeError(
                f"{self.tp.topic}-{self.tp.partition}: offset {nxt} keeps failing: {exc}"
            ) from exc
        self._seek(nxt)
        return nxt

    def _stalled(self, nxt: int, until: int) -> int:
        resumed = self._recover(nxt, until, "found while waiting for them")
        if resumed is not None:
            return resumed
        tp = self.tp
        raise FetchTimeoutError(
            f"cannot fetch offset {nxt} of {tp.topic}-{tp.partition} in "
            f"{self.poll_timeout_s:g} s (option 'kafkaConsumer.pollTimeoutMs')"
        )
