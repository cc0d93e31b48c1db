"""The write side of ``format("kafkacore")``: batch ``df.write`` and streaming ``writeStream``.

Theory of operation
-------------------
Spark calls :func:`batch_writer` / :func:`stream_writer` on the driver
(in a planning Python worker) with the options, the input schema and
``overwrite``. Everything that can be checked without data is checked
there (options: :mod:`._sink_options`; columns: :mod:`._sink_schema`;
the save mode), so a mistake fails the query before any record moves.

What Spark hands the Python writer (observed on pyspark 4.2.0):

* batch: ``mode("append")`` gives ``overwrite=False`` and
  ``mode("overwrite")`` ``True``; Spark itself refuses ``errorifexists``
  (the default mode!) and ``ignore`` for Python data sources
  (UNSUPPORTED_DATA_SOURCE_SAVE_MODE), before the writer is asked. Kafka
  cannot be truncated, so overwrite is refused here: write with
  ``.mode("append")``.
* streams: ``append`` and ``update`` give ``overwrite=False``, ``complete``
  gives ``True``. All three are accepted, as the JVM connector accepts them
  (each batch's rows are appended to the topic).

The writer object is pickled to the executors, where ``write`` runs one
task (:func:`._sink_task.write_task`), and Spark calls ``commit`` or
``abort`` on the driver with the tasks' :class:`._sink_task.SinkCommit`
messages (for streams on a fresh writer each batch, so the writer keeps no
state of its own between calls). With ``exactlyOnce`` the driver ends the
tasks' transactions there (:mod:`._txn`); the whole protocol and its crash
windows are in ``docs/spark.md`` (Write).

Write ids: a batch write draws a random id when its writer is made (every
task attempt and the commit see the same pickled id); a stream uses its
query id (``sql.streaming.queryId``, kept in the checkpoint, so a restarted
query has the same transactional ids and markers), and the batch id comes
from the task's local property ``streaming.sql.batchId``.
"""

from __future__ import annotations

import logging
import uuid
from collections.abc import Iterator, Sequence
from typing import TYPE_CHECKING, Any

from pyspark.sql.datasource import DataSourceArrowWriter, DataSourceStreamArrowWriter
from pyspark.sql.types import StructType

from pyspark_kafkacore._sink_options import SinkOptionError, SinkOptions, parse_sink_options
from pyspark_kafkacore._sink_schema import SinkLayout, plan_layout
from pyspark_kafkacore._sink_task import SinkCommit, TxnPlan, transactional_id, write_task
from pyspark_kafkacore._txn import TaskTransaction, end_transactions, fence_transactional_ids

if TYPE_CHECKING:
    import pyarrow as pa
    from pyspark.sql.datasource import WriterCommitMessage

__all__ = [
    "KafkaBatchWriter",
    "KafkaStreamWriter",
    "batch_writer",
    "check_reachable",
    "stream_writer",
]

log = logging.getLogger("pyspark_kafkacore.sink")

_QUERY_ID = "sql.streaming.queryId"
_BATCH_ID = "streaming.sql.batchId"


def _task_partition() -> int:
    from pyspark import TaskContext

    ctx = TaskContext.get()
    if ctx is None:
        raise RuntimeError("format('kafkacore'): write() must run inside a Spark task")
    return ctx.partitionId()


def _local_property(name: str) -> str:
    from pyspark import TaskContext

    ctx = TaskContext.get()
    value = None if ctx is None else ctx.getLocalProperty(name)
    if value is None:
        raise RuntimeError(
            f"format('kafkacore'): the streaming task has no local property {name!r}; "
            "exactlyOnce needs Spark's micro-batch execution"
        )
    return value


def _messages(messages: Sequence[WriterCommitMessage | None]) -> list[SinkCommit | None]:
    out: list[SinkCommit | None] = []
    for message in messages:
        if message is not None and not isinstance(message, SinkCommit):
            raise TypeError(f"format('kafkacore'): unexpected commit message {message!r}")
        out.append(message)
    return out


def _client(options: SinkOptions) -> Any:
    from kafkacore.transports.selector import KafkaClient

    client = KafkaClient(**options.client)
    client.start()
    return client


def check_reachable(options: SinkOptions, *, stream: bool = False) -> None:
    """Fail the query now when no bootstrap server answers, or when an exactly-once
    stream's marker topic does not exist, naming the option.

    One Metadata request on the driver when the write is planned; without it a
    wrong address is found by every task after ``kafka.max.block.ms`` (and an
    exactly-once task's InitProducerId only says it timed out), and a missing
    marker topic by every task's OffsetFetch (UNKNOWN_TOPIC_ID, no name).
    """
    from kafkacore.client import AnyNode
    from kafkacore.errors import KafkaConnectionError
    from kafkacore.protocol.enums import ErrorCode
    from kafkacore.protocol.messages import MetadataRequest
    from kafkacore.protocol.messages.metadata_request import MetadataRequestTopic

    marker = options.marker_topic if stream and options.exactly_once else None
    topics = [MetadataRequestTopic(name=marker)] if marker else []
    client = _client(options)
    try:
        request = MetadataRequest(topics=topics, allow_auto_topic_creation=False)
        response = client.send(request, target=AnyNode())
    except KafkaConnectionError as exc:
        raise SinkOptionError(
            f"option 'kafka.bootstrap.servers': no broker answers at "
            f"{options.client.get('bootstrap_servers')}: {exc}"
        ) from exc
    finally:
        client.close()
    if any(t.error_code == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION for t in response.topics):
        raise SinkOptionError(
            f"option 'markerTopic' (default: the 'topic' option): topic {marker!r} does not "
            "exist; an exactly-once stream keeps its batch markers in an existing topic"
        )


def _settle_timeout_s(options: SinkOptions) -> float:
    # An open transaction outliving its timeout is aborted by the coordinator
    # anyway; waiting longer than that for an answer gains nothing.
    return options.transaction_timeout_ms / 1000 + 30.0


def _commit(options: SinkOptions, messages: Sequence[WriterCommitMessage | None]) -> None:
    found = [m for m in _messages(messages) if m is not None]
    open_txns: list[TaskTransaction] = [m.transaction for m in found if m.transaction is not None]
    records = sum(m.records for m in found)
    if not open_txns:
        log.info("format('kafkacore'): nothing to commit (%d records)", records)
        return
    client = _client(options)
    try:
        failed = end_transactions(
            client,
            open_txns,
            commit=True,
            timeout_s=_settle_timeout_s(options),
            backoff_s=options.retry_backoff_ms / 1000,
        )
    finally:
        client.close()
    if failed:
        done = len(open_txns) - len(failed)
        detail = "; ".join(f"{tid}: {err!r}" for tid, err in sorted(failed.items()))
        raise RuntimeError(
            f"format('kafkacore'): exactly-once commit failed for {len(failed)} of "
            f"{len(open_txns)} task transactions ({done} committed): {detail}. Rows of the "
            "failed tasks are not in Kafka; a stream re-runs the batch on restart (committed "
            "tasks are skipped), a batch write must be re-run. Raise kafka.transaction.timeout.ms "
            "if tasks take longer than it."
        )
    log.info(
        "format('kafkacore'): committed %d task transactions (%d records)", len(open_txns), records
    )


def _abort(
    options: SinkOptions,
    messages: Sequence[WriterCommitMessage | None],
    id_base: str | None,
) -> None:
    all_messages = _messages(messages)
    open_txns = [m.transaction for m in all_messages if m is not None and m.transaction is not None]
    # Tasks without a message failed; their last attempt may have left a
    # transaction open. InitProducerId on its id aborts it now.
    missing = (
        [transactional_id(id_base, i) for i, m in enumerate(all_messages) if m is None]
        if id_base is not None
        else []
    )
    if not open_txns and not missing:
        return
    client = _client(options)
    try:
        failed = end_transactions(
            client,
            [t for t in open_txns if t is not None],
            commit=False,
            timeout_s=_settle_timeout_s(options),
            backoff_s=options.retry_backoff_ms / 1000,
        )
        failed.update(
            fence_transactional_ids(
                client,
                missing,
                transaction_timeout_ms=options.transaction_timeout_ms,
                timeout_s=_settle_timeout_s(options),
                backoff_s=options.retry_backoff_ms / 1000,
            )
        )
    finally:
        client.close()
    for tid, err in sorted(failed.items()):
        # Best effort: the coordinator aborts it at its transaction timeout anyway.
        log.warning("format('kafkacore'): could not abort the transaction of %s: %r", tid, err)


class KafkaBatchWriter(DataSourceArrowWriter):
    """``df.write.format("kafkacore")``; pickled to the executors."""

    def __init__(self, options: SinkOptions, layout: SinkLayout, write_id: str) -> None:
        self.options = options
        self.layout = layout
        self.write_id = write_id

    @property
    def id_base(self) -> str:
        return f"{self.options.transactional_id_prefix}-{self.write_id}"

    def write(self, iterator: Iterator[pa.RecordBatch]) -> SinkCommit:
        txn = TxnPlan(id_base=self.id_base) if self.options.exactly_once else None
        return write_task(
            iterator,
            options=self.options,
            layout=self.layout,
            partition=_task_partition(),
            txn=txn,
        )

    def commit(self, messages: list[WriterCommitMessage | None]) -> None:
        if self.options.exactly_once:
            _commit(self.options, messages)

    def abort(self, messages: list[WriterCommitMessage | None]) -> None:
        if self.options.exactly_once:
            _abort(self.options, messages, self.id_base)


class KafkaStreamWriter(DataSourceStreamArrowWriter):
    """``df.writeStream.format("kafkacore")``; pickled to the executors."""

    def __init__(self, options: SinkOptions, layout: SinkLayout) -> None:
        self.options = options
        self.layout = layout

    def write(self, iterator: Iterator[pa.RecordBatch]) -> SinkCommit:
        txn = None
        if self.options.exactly_once:
            query = _local_property(_QUERY_ID)
            txn = TxnPlan(
                id_base=f"{self.options.transactional_id_prefix}-{query}",
                batch_id=int(_local_property(_BATCH_ID)),
                marker_topic=self.options.marker_topic,
            )
        return write_task(
            iterator,
            options=self.options,
            layout=self.layout,
            partition=_task_partition(),
            txn=txn,
        )

    def commit(self, messages: list[WriterCommitMessage | None], batchId: int) -> None:
        if self.options.exactly_once:
            _commit(self.options, messages)

    def abort(self, messages: list[WriterCommitMessage | None], batchId: int) -> None:
        if not self.options.exactly_once:
            return
        # The query id is not known on the driver here; the tasks that
        # answered carry it in their transactional ids.
        found = [m.transaction for m in _messages(messages) if m is not None and m.transaction]
        id_base = found[0].transactional_id.rsplit("-", 1)[0] if found else None
        _abort(self.options, messages, id_base)


def batch_writer(options: Any, schema: StructType, overwrite: bool) -> KafkaBatchWriter:
    """The batch writer, or an error naming what is wrong (before any data moves)."""
    if overwrite:
        raise SinkOptionError(
            "format('kafkacore') cannot overwrite: a Kafka topic is append-only. "
            "Write with .mode('append')"
        )
    parsed = parse_sink_options(options)
    layout = plan_layout(schema, parsed.topic)
    return KafkaBatchWriter(parsed, layout, uuid.uuid4().hex)


def stream_writer(options: Any, schema: StructType, overwrite: bool) -> KafkaStreamWriter:
    """The streaming writer (append, update and complete output modes)."""
    parsed = parse_sink_options(options)
    layout = plan_layout(schema, parsed.topic)
    if parsed.exactly_once and parsed.marker_topic is None:
        raise SinkOptionError(
            "option 'markerTopic' is required for an exactly-once stream whose topic comes "
            "from a column: name an existing topic whose partition 0 keys the batch markers "
            "(or set the 'topic' option)"
        )
    return KafkaStreamWriter(parsed, layout)
