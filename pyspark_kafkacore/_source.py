"""The read side: ``spark.read`` and ``spark.readStream`` of ``format("kafkacore")``.

Theory of operation
-------------------
PySpark runs a Python data source in several processes, and this module's
readers are built for that:

* ``schema()`` (:func:`read_schema`) runs when the query is defined: every
  option is checked there, so bad input fails at ``load()``, before any
  data moves.
* A batch read plans in a short-lived Python worker on the driver:
  :meth:`KafkaBatchReader.partitions` lists the partitions, binds the
  boundaries (timestamps are looked up, earliest/latest stay -2/-1 for the
  executors) and cuts task ranges (:func:`~pyspark_kafkacore._ranges.plan_batch_ranges`).
  The reader is then pickled to the executors, whose ``read()`` streams one
  range each (:func:`~pyspark_kafkacore._source_fetch.read_range`).
* A stream lives in one long-running Python worker on the driver, which
  asks :class:`KafkaStreamReader` for offsets (``initialOffset``,
  ``latestOffset`` with the read limits, ``partitions(start, end)``,
  ``commit``); the executors read the ranges as in a batch. Readers never
  hold a connection when pickled: clients are made on first use.

Offsets are the connector's JSON (see :mod:`pyspark_kafkacore._offsets`), so
a checkpoint shows ``{"topic":{"0":123}}`` and a restarted query resumes
at exactly the offsets of its last committed micro-batch. Data loss found
on the driver (partitions gone, offsets going back, new partitions not
starting at 0) is raised or logged per ``failOnDataLoss``, as on executors.
"""

from __future__ import annotations

import concurrent.futures
import logging
import time
import uuid
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

from pyspark.sql.datasource import DataSourceReader, DataSourceStreamReader, InputPartition
from pyspark.sql.streaming.datasource import (
    ReadAllAvailable,
    ReadLimit,
    ReadMaxRows,
    ReadMinRows,
    SupportsTriggerAvailableNow,
)
from pyspark.sql.types import StructType

from kafkacore.client import TopicPartition
from kafkacore.transports.selector import KafkaConsumer

from ._arrow import spark_schema
from ._offsets import (
    Earliest,
    Latest,
    OffsetLimit,
    SourceOptionError,
    SpecificOffsets,
    offsets_from_json,
    offsets_to_json,
)
from ._ranges import OffsetRange, TriggerDelay, plan_batch_ranges, rate_limit, stream_ranges
from ._source_admin import SourceAdmin
from ._source_fetch import DataLossError, read_range
from ._source_options import SourceOptions, parse_source_options

__all__ = [
    "KafkaBatchReader",
    "KafkaStreamReader",
    "batch_reader",
    "read_schema",
    "stream_reader",
]

_log = logging.getLogger("pyspark_kafkacore")


def read_schema(options: Mapping[str, str]) -> StructType:
    """The fixed read schema; checks every option first (errors name the option)."""
    parsed = parse_source_options(options, "any")
    return spark_schema(parsed.include_headers)


def _check_schema(parsed: SourceOptions, schema: StructType) -> None:
    want = spark_schema(parsed.include_headers)
    if schema != want:
        raise SourceOptionError(
            "format('kafkacore') reads a fixed schema and does not accept a user-specified one: "
            f"remove .schema(...) (the schema is {want.simpleString()})"
        )


def batch_reader(options: Mapping[str, str], schema: StructType) -> KafkaBatchReader:
    parsed = parse_source_options(options, "batch")
    _check_schema(parsed, schema)
    return KafkaBatchReader(parsed)


def stream_reader(options: Mapping[str, str], schema: StructType) -> KafkaStreamReader:
    parsed = parse_source_options(options, "stream")
    _check_schema(parsed, schema)
    return KafkaStreamReader(parsed)


def _group(parsed: SourceOptions, default_prefix: str) -> str:
    """The connector's unique group id per query (``groupIdPrefix`` or ``kafka.group.id``).

    The source joins no group and commits nothing there, so the id only
    names the clients (``client.id``) unless ``kafka.client.id`` is set.
    """
    if parsed.group_id is not None:
        return parsed.group_id
    return f"{parsed.group_id_prefix or default_prefix}-{uuid.uuid4()}"


def _with_client_id(parsed: SourceOptions, client_id: str) -> dict[str, Any]:
    kafka = dict(parsed.kafka)
    kafka.setdefault("client_id", client_id)
    return kafka


def _side_option(limit: OffsetLimit, side: str) -> str:
    if isinstance(limit, SpecificOffsets):
        return f"{side}Offsets"
    return f"{side}OffsetsByTimestamp"


def _needs_lookups(parsed: SourceOptions) -> bool:
    """Whether planning a batch looks offsets up (else -2/-1 go to the executors)."""
    plain = (type(None), Earliest, Latest, SpecificOffsets)
    return (
        not isinstance(parsed.starting, plain)
        or not isinstance(parsed.ending, plain)
        or parsed.min_partitions is not None
        or parsed.max_records_per_partition is not None
    )


def _partitions_of(ranges: Sequence[OffsetRange]) -> list[InputPartition]:
    return [InputPartition(r) for r in ranges]


class _Reading:
    """What executors need to read a range (pickled with the reader)."""

    def __init__(self, parsed: SourceOptions, executor_kafka: dict[str, Any]) -> None:
        self.parsed = parsed
        self.executor_kafka = executor_kafka

    def read_partition(self, partition: InputPartition) -> Iterator[Any]:
        rng = partition.value
        if not isinstance(rng, OffsetRange):
            return iter(())  # Spark's placeholder when there is nothing to read
        return read_range(
            rng,
            kafka=self.executor_kafka,
            poll_timeout_ms=self.parsed.poll_timeout_ms,
            fail_on_data_loss=self.parsed.fail_on_data_loss,
            include_headers=self.parsed.include_headers,
        )


class KafkaBatchReader(DataSourceReader):
    """``spark.read.format("kafkacore")``: one task per offset range."""

    def __init__(self, parsed: SourceOptions) -> None:
        self.parsed = parsed
        self.group = _group(parsed, "spark-kafka-relation")
        executor_id = self.group if parsed.group_id else f"{self.group}-executor"
        self._reading = _Reading(parsed, _with_client_id(parsed, executor_id))

    def partitions(self) -> Sequence[InputPartition]:
        parsed = self.parsed
        admin = SourceAdmin(parsed, client_id=f"{self.group}-driver")
        try:
            if _needs_lookups(parsed):
                admin.start_lookups()
            tps = admin.partitions()
            starting = parsed.starting or Earliest()
            ending = parsed.ending or Latest()
            start = admin.bounds(
                starting, tps, starting=True, option=_side_option(starting, "starting")
            )
            end = admin.bounds(ending, tps, starting=False, option=_side_option(ending, "ending"))
            ranges = plan_batch_ranges(
                start,
                end,
                min_partitions=parsed.min_partitions,
                max_records_per_partition=parsed.max_records_per_partition,
                resolve=admin.resolve,
            )
        finally:
            admin.close()
        return _partitions_of(ranges)

    def read(self, partition: InputPartition) -> Iterator[Any]:
        return self._reading.read_partition(partition)


class KafkaStreamReader(DataSourceStreamReader, SupportsTriggerAvailableNow):
    """``spark.readStream.format("kafkacore")``: micro-batches between offsets."""

    def __init__(self, parsed: SourceOptions) -> None:
        self.parsed = parsed
        self.group = _group(parsed, "spark-kafka-source")
        executor_id = self.group if parsed.group_id else f"{self.group}-executor"
        self._reading = _Reading(parsed, _with_client_id(parsed, executor_id))
        self._admin: SourceAdmin | None = None
        self._committer: KafkaConsumer | None = None
        self._available_now = False
        self._target: dict[TopicPartition, int] | None = None
        self._latest: dict[TopicPartition, int] | None = None
        self._committed: dict[TopicPartition, int] | None = None
        self._commit_pending: concurrent.futures.Future[Any] | None = None
        self._delay = (
            None
            if parsed.min_offsets_per_trigger is None
            else TriggerDelay(parsed.min_offsets_per_trigger, parsed.max_trigger_delay_ms)
        )

    def __getstate__(self) -> dict[str, Any]:
        # Pickled for the executors' read(): no clients travel.
        state = dict(self.__dict__)
        state["_admin"] = None
        state["_committer"] = None
        state["_commit_pending"] = None
        return state

    def _lookups(self) -> SourceAdmin:
        if self._admin is None:
            self._admin = SourceAdmin(self.parsed, client_id=f"{self.group}-driver")
        return self._admin

    def _report_data_loss(self, message: str) -> None:
        if self.parsed.fail_on_data_loss:
            raise DataLossError(
                message + "; set the option 'failOnDataLoss' to false to log it and go on"
            )
        _log.warning("%s; failOnDataLoss is false, going on", message)

    # -- offsets ----------------------------------------------------------------
    def initialOffset(self) -> dict[str, dict[str, int]]:
        admin = self._lookups()
        admin.start_lookups()
        tps = admin.partitions()
        starting = self.parsed.starting or Latest()
        if isinstance(starting, Earliest):
            offsets = admin.earliest(tps)
        elif isinstance(starting, Latest):
            offsets = admin.latest(tps)
        else:
            option = _side_option(starting, "starting")
            offsets = admin.resolve(admin.bounds(starting, tps, starting=True, option=option))
        return offsets_to_json(offsets)

    def getDefaultReadLimit(self) -> ReadLimit:
        parsed = self.parsed
        if parsed.max_offsets_per_trigger is not None:
            return ReadMaxRows(parsed.max_offsets_per_trigger)
        if parsed.min_offsets_per_trigger is not None:
            return ReadMinRows(parsed.min_offsets_per_trigger)
        return ReadAllAvailable()

    def prepareForTriggerAvailableNow(self) -> None:
        self._available_now = True

    def _fetch_latest(self, start: Mapping[TopicPartition, int]) -> dict[TopicPartition, int]:
        admin = self._lookups()
        admin.start_lookups()
        return admin.latest(admin.partitions(missing_ok=True), known=start)

    def latestOffset(self, start: dict[str, Any], limit: ReadLimit) -> dict[str, dict[str, int]]:
        begin = offsets_from_json(start, "latestOffset: the start offset")
        self._commit_to_group(begin)
        if self._available_now:
            if self._target is None:
                self._target = self._fetch_latest(begin)
            latest = self._target
        else:
            latest = self._fetch_latest(begin)
        self._latest = latest
        parsed = self.parsed
        if isinstance(limit, ReadAllAvailable):
            return offsets_to_json(latest)
        # Trigger.AvailableNow must reach its target, so it never holds a batch back.
        if self._delay is not None and not self._available_now:
            now_ms = int(time.time() * 1000)
            if self._delay.hold(begin, latest, now_ms):
                return offsets_to_json(begin)
        if parsed.max_offsets_per_trigger is not None:
            new = set(latest) - set(begin)
            firsts = self._lookups().earliest(new) if new else {}
            return offsets_to_json(
                rate_limit(parsed.max_offsets_per_trigger, begin, latest, firsts)
            )
        return offsets_to_json(latest)

    def reportLatestOffset(self) -> dict[str, dict[str, int]] | None:
        return None if not self._latest else offsets_to_json(self._latest)

    def partitions(self, start: dict[str, Any], end: dict[str, Any]) -> Sequence[InputPartition]:
        begin = offsets_from_json(start, "partitions: the start offset")
        finish = offsets_from_json(end, "partitions: the end offset")
        new = set(finish) - set(begin)
        admin = self._lookups()
        firsts: dict[TopicPartition, int] = {}
        if new:
            # Partitions deleted meanwhile are left out (and reported as lost).
            firsts = admin.earliest(new & admin.partitions(missing_ok=True))
        ranges = stream_ranges(
            begin,
            finish,
            firsts,
            report_data_loss=self._report_data_loss,
            min_partitions=self.parsed.min_partitions,
            max_records_per_partition=self.parsed.max_records_per_partition,
        )
        return _partitions_of(ranges)

    def read(self, partition: InputPartition) -> Iterator[Any]:
        return self._reading.read_partition(partition)

    def _commit_to_group(self, finished: dict[TopicPartition, int]) -> None:
        """``commitOffsetsToGroup``: the start of the next micro-batch is the end of
        the last finished one (Spark asks for it after the batch's commit log is
        written; its own ``commit()`` comes one batch later, and never for the last
        batch of a run). Committed asynchronously; a failure is logged, never fatal."""
        group = self.parsed.commit_offsets_to_group
        if group is None or not finished or finished == self._committed:
            return
        self._check_commit()
        if self._committer is None:
            self._committer = KafkaConsumer(
                **_with_client_id(self.parsed, f"{self.group}-committer"),
                group_id=group,
                enable_auto_commit=False,
                auto_offset_reset="none",
            )
        self._commit_pending = self._committer.commit_async(finished)
        self._committed = dict(finished)

    def _check_commit(self, timeout: float = 0.0) -> None:
        pending, self._commit_pending = self._commit_pending, None
        if pending is None:
            return
        try:
            pending.result(timeout)
        except Exception as exc:
            _log.warning(
                "committing offsets to group %r failed: %s",
                self.parsed.commit_offsets_to_group,
                exc,
            )

    def commit(self, end: dict[str, Any]) -> None:
        # Spark's commit(end) means it will not ask for offsets before ``end`` again;
        # there is nothing to free. The group commit happens in latestOffset.
        pass

    def stop(self) -> None:
        admin, committer = self._admin, self._committer
        self._admin = self._committer = None
        if committer is not None:
            self._check_commit(timeout=5.0)
            committer.close(timeout=5.0, autocommit=False)
        if admin is not None:
            admin.close()
