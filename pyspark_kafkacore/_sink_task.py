"""One Spark task of a ``format("kafkacore")`` write: records in, a commit message out.

Theory of operation
-------------------
:func:`write_task` runs on an executor with the task's Arrow batches. It
touches Kafka only once the task has a row (an empty task answers at once).

At least once (the default): one kafkacore blocking producer
(:class:`kafkacore.transports.selector.KafkaProducer`, idempotent unless told
otherwise; borrowed from the worker's :mod:`._sink_producers` pool) sends
every chunk with ``send_many`` (``send`` for records with headers), waits
for all of them (``flush``) and fails the task on the first error. A retried
task writes its rows again, as with the JVM connector.

Exactly once (:class:`TxnPlan` given): the producer gets the transactional
id ``<id base>-<task partition>``, the same for every attempt of the task,
and then

1. ``init_transactions()``: InitProducerId fences any earlier attempt of the
   task (or of the same stream partition in an earlier run) and the
   coordinator aborts the transaction it left open, before this attempt
   writes anything;
2. for a stream batch, read the task's *batch marker*: the offset that the
   consumer group named like the transactional id committed on
   ``(marker topic, 0)``, fetched with ``require_stable`` (KIP-447), so it is
   the last batch id this task committed. If it is this batch or a later one,
   the batch is already in Kafka: write nothing, report ``skipped``;
3. ``begin_transaction()``, send every record, ``flush()``;
4. for a stream batch, ``send_offsets_to_transaction({(marker topic, 0):
   batch id}, group)``: the marker commits atomically with the records;
5. report the producer id and epoch in the :class:`SinkCommit` and
   ``close()`` the producer *without* committing. kafkacore's ``close`` stops
   the core and shuts the connections; it sends no EndTxn, so the
   transaction stays open on the coordinator for the driver
   (:mod:`pyspark_kafkacore._txn`) to commit or abort.

On any error the producer is closed without waiting (what is left unsent is
dropped) and the error fails the task; its open transaction is aborted by
the next attempt's step 1, by the driver's ``abort``, or by the
coordinator's transaction timeout.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import pyarrow as pa
from pyspark.sql.datasource import WriterCommitMessage

from kafkacore.client import TopicPartition
from kafkacore.errors import KafkaError
from pyspark_kafkacore._sink_options import SinkOptions
from pyspark_kafkacore._sink_producers import pool
from pyspark_kafkacore._sink_rows import chunks
from pyspark_kafkacore._sink_schema import SinkLayout
from pyspark_kafkacore._txn import TaskTransaction

__all__ = ["SinkCommit", "SinkWriteError", "TxnPlan", "transactional_id", "write_task"]


class SinkWriteError(RuntimeError):
    """Records of a task could not be written; the task fails."""


@dataclass(frozen=True, slots=True, kw_only=True)
class TxnPlan:
    """What an exactly-once task needs beyond the options."""

    id_base: str  # "<prefix>-<write id>": the batch write's id or the stream query's id
    batch_id: int | None = None  # streams: the micro-batch (its marker is stored)
    marker_topic: str | None = None  # streams: partition 0 of it keys the marker


@dataclass(frozen=True, slots=True, kw_only=True)
class SinkCommit(WriterCommitMessage):
    """A task's answer to the driver (pickled back by Spark)."""

    partition: int
    records: int
    transaction: TaskTransaction | None = None  # exactly once: left open for the driver
    skipped: bool = False  # streams: the marker shows this batch was committed before


def transactional_id(id_base: str, partition: int) -> str:
    """The transactional id (and marker group) of one task partition of a write."""
    return f"{id_base}-{partition}"


class _Failures:
    """First error among the futures of a task (called on the producer's loop thread)."""

    __slots__ = ("count", "first")

    def __init__(self) -> None:
        self.first: BaseException | None = None
        self.count = 0

    def note(self, fut: Any) -> None:
        error = fut.exception()
        if error is not None:
            self.count += 1
            if self.first is None:
                self.first = error

    def refused(self, error: BaseException) -> None:
        """A send the producer refused before queueing it (a record too large)."""
        self.count += 1
        if self.first is None:
            self.first = error

    def check(self, partition: int) -> None:
        if self.first is not None:
            raise SinkWriteError(
                f"format('kafkacore'): task partition {partition} could not write its records "
                f"({self.count} send calls failed; first: {self.first!r})"
            ) from self.first


def _first_rows(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch] | None:
    """``batches`` from the first non-empty one on, or None if there is no row at all."""
    for batch in batches:
        if batch.num_rows:
            return itertools.chain((batch,), batches)
    return None


def _send_all(
    producer: Any,
    batches: Iterator[pa.RecordBatch],
    layout: SinkLayout,
    topic: str | None,
    partition: int,
) -> int:
    failures = _Failures()
    sent = 0
    for batch in batches:
        for chunk in chunks(batch, layout, topic):
            sent += len(chunk)
            try:
                if chunk.headers is None:
                    producer.send_many(
                        chunk.topic, values=chunk.values, keys=chunk.keys, partition=chunk.partition
                    ).add_done_callback(failures.note)
                    continue
                keys = chunk.keys if chunk.keys is not None else itertools.repeat(None)
                for key, value, headers in zip(keys, chunk.values, chunk.headers, strict=False):
                    producer.send(
                        chunk.topic, value, key, headers, partition=chunk.partition
                    ).add_done_callback(failures.note)
            except KafkaError as exc:  # refused at the call (a record over max_request_size)
                failures.refused(exc)
        failures.check(partition)  # stop at the first failure rather than send on
    producer.flush()
    failures.check(partition)
    return sent


def _read_marker(options: SinkOptions, group: str, topic: str, timeout_s: float) -> int | None:
    from kafkacore.transports.selector import KafkaConsumer

    consumer = KafkaConsumer(
        group_id=group,
        isolation_level="read_committed",
        enable_auto_commit=False,
        **options.client,
    )
    try:
        committed = consumer.committed([TopicPartition(topic, 0)], timeout=timeout_s)
    finally:
        consumer.close(timeout=5.0, autocommit=False)
    found = next(iter(committed.values()), None)
    return None if found is None else found.offset


def write_task(
    batches: Iterator[pa.RecordBatch],
    *,
    options: SinkOptions,
    layout: SinkLayout,
    partition: int,
    txn: TxnPlan | None = None,
) -> SinkCommit:
    """Write one task's records; see the module docstring."""
    from kafkacore.transports.selector import KafkaProducer

    rows = _first_rows(batches)
    if rows is None:
        return SinkCommit(partition=partition, records=0)
    if txn is None:
        producer = pool.acquire(options.producer)
        done = False
        try:
            sent = _send_all(producer, rows, layout, options.topic, partition)
            done = True
        finally:
            pool.release(options.producer, producer, healthy=done)
        return SinkCommit(partition=partition, records=sent)

    tid = transactional_id(txn.id_base, partition)
    producer = KafkaProducer(**options.producer, transactional_id=tid)
    block_s = producer.config.max_block_ms / 1000
    done = False
    try:
        producer.init_transactions(block_s)
        if txn.batch_id is not None:
            assert txn.marker_topic is not None
            marker = _read_marker(options, tid, txn.marker_topic, block_s)
            if marker is not None and marker >= txn.batch_id:
                done = True
                return SinkCommit(partition=partition, records=0, skipped=True)
        producer.begin_transaction()
        sent = _send_all(producer, rows, layout, options.topic, partition)
        if txn.batch_id is not None:
            assert txn.marker_topic is not None
            producer.send_offsets_to_transaction(
                {(txn.marker_topic, 0): txn.batch_id}, tid, timeout=block_s
            )
        pid, epoch = producer.run_on_loop(lambda core: core.producer_id, timeout=block_s)
        v2 = producer.run_on_loop(lambda core: core.transactions_v2, timeout=block_s)
        done = True
    finally:
        # No commit here: close() leaves the transaction open for the driver.
        producer.close(None if done else 0.0)
    return SinkCommit(
        partition=partition,
        records=sent,
        transaction=TaskTransaction(transactional_id=tid, producer_id=pid, epoch=epoch, v2=v2),
    )
