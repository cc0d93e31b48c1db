"""The source's pure parts, without Spark or a broker: options, offsets JSON,
range splitting, rate limits, Arrow columns.

Expected values follow the JVM connector's documented semantics worked out
by hand; ``test_source_batch.py`` and ``test_source_stream.py`` hold the
same cases against the connector itself.
"""

from __future__ import annotations

import json
from array import array
from collections.abc import Callable
from typing import Any

import pytest

from kafkacore.client import TopicPartition
from kafkacore.consumer import PartitionBatch
from pyspark_kafkacore._arrow import (
    MalformedTimestampError,
    arrow_schema,
    record_batch,
    spark_schema,
)
from pyspark_kafkacore._kafka_params import KafkaOptionError
from pyspark_kafkacore._offsets import (
    Earliest,
    GlobalTimestamp,
    Latest,
    SourceOptionError,
    SpecificOffsets,
    SpecificTimestamps,
    offsets_from_json,
    offsets_to_json,
)
from pyspark_kafkacore._ranges import (
    OffsetRange,
    TriggerDelay,
    plan_batch_ranges,
    rate_limit,
    split_ranges,
    stream_ranges,
)
from pyspark_kafkacore._source_options import (
    Assign,
    Subscribe,
    SubscribePattern,
    parse_source_options,
    time_string_ms,
)

TP = TopicPartition
BASE = {"kafka.bootstrap.servers": "127.0.0.1:9092", "subscribe": "t"}


def opts(**extra: str) -> dict[str, str]:
    return {**BASE, **{k.replace("__", "."): v for k, v in extra.items()}}


# -- options -------------------------------------------------------------------
def test_defaults_are_the_connectors() -> None:
    got = parse_source_options(BASE)
    assert got.strategy == Subscribe(("t",))
    assert got.kafka == {"bootstrap_servers": "127.0.0.1:9092"}
    assert got.starting is None and got.ending is None  # batch: earliest..latest, stream: latest
    assert got.fail_on_data_loss is True
    assert got.min_partitions is None and got.max_records_per_partition is None
    assert got.max_offsets_per_trigger is None and got.min_offsets_per_trigger is None
    assert got.max_trigger_delay_ms == 15 * 60 * 1000
    assert got.poll_timeout_ms == 120_000
    assert (got.fetch_offset_num_retries, got.fetch_offset_retry_interval_ms) == (3, 1000)
    assert got.include_headers is False and got.group_id_prefix is None
    assert got.commit_offsets_to_group is None and got.read_committed is False


def test_names_are_case_insensitive_and_values_typed() -> None:
    got = parse_source_options(
        {
            "KAFKA.BOOTSTRAP.SERVERS": "h:1",
            "SubscribePattern": "^events-.*",
            "STARTINGOFFSETS": "earliest",
            "failondataloss": "FALSE",
            "minPartitions": "7",
            "maxRecordsPerPartition": "100",
            "maxOffsetsPerTrigger": "50",
            "minOffsetsPerTrigger": "10",
            "maxTriggerDelay": "30s",
            "kafkaConsumer.pollTimeoutMs": "5000",
            "fetchOffset.numRetries": "5",
            "fetchOffset.retryIntervalMs": "20",
            "groupIdPrefix": "mine",
            "includeHeaders": "True",
            "kafka.isolation.level": "read_committed",
            "commitOffsetsToGroup": "lag-watch",
        },
        "stream",
    )
    assert got.strategy == SubscribePattern("^events-.*")
    assert got.starting == Earliest()
    assert got.fail_on_data_loss is False
    assert (got.min_partitions, got.max_records_per_partition) == (7, 100)
    assert (got.max_offsets_per_trigger, got.min_offsets_per_trigger) == (50, 10)
    assert got.max_trigger_delay_ms == 30_000
    assert got.poll_timeout_ms == 5000
    assert (got.fetch_offset_num_retries, got.fetch_offset_retry_interval_ms) == (5, 20)
    assert got.group_id_prefix == "mine" and got.include_headers is True
    assert got.read_committed is True and got.commit_offsets_to_group == "lag-watch"


def test_pattern_is_a_search_like_javas_find_first_in() -> None:
    pattern = SubscribePattern("ev.nt")
    assert pattern.matches("my-events") and not pattern.matches("other")


def test_assign_json_and_group_id() -> None:
    got = parse_source_options(
        {"kafka.bootstrap.servers": "h:1", "assign": '{"a":[0,2],"b":[1]}', "kafka.group.id": "g"}
    )
    assert got.strategy == Assign((TP("a", 0), TP("a", 2), TP("b", 1)))
    assert got.group_id == "g" and "group_id" not in got.kafka


@pytest.mark.parametrize(
    ("options", "names"),
    [
        ({"kafka.bootstrap.servers": "h:1"}, ["subscribe", "subscribePattern", "assign"]),
        (opts(assign='{"t":[0]}'), ["only one", "'subscribe'", "'assign'"]),
        (opts(subscribePattern="x"), ["'subscribe'", "'subscribePattern'"]),
        ({"kafka.bootstrap.servers": "h:1", "assign": "t:0"}, ["'assign'"]),
        ({"kafka.bootstrap.servers": "h:1", "assign": '{"t":["x"]}'}, ["'assign'", "topicA"]),
        ({"kafka.bootstrap.servers": "h:1", "subscribe": " , "}, ["'subscribe'"]),
        ({"kafka.bootstrap.servers": "h:1", "subscribePattern": "  "}, ["'subscribePattern'"]),
        ({"kafka.bootstrap.servers": "h:1", "subscribePattern": "(a"}, ["'subscribePattern'"]),
        ({"subscribe": "t"}, ["'kafka.bootstrap.servers'"]),
        (opts(startingOffsets="{not json"), ["'startingOffsets'", "topicA"]),
        (opts(startingOffsets='{"t":{"0":-3}}'), ["'startingOffsets'", ">= -2"]),
        (opts(startingOffsets='{"t":{"x":1}}'), ["'startingOffsets'"]),
        (opts(endingOffsetsByTimestamp='{"t":{"0":-1}}'), ["'endingOffsetsByTimestamp'", ">= 0"]),
        (opts(startingTimestamp="soon"), ["'startingTimestamp'", "integer"]),
        (
            opts(startingOffsetsByTimestampStrategy="first"),
            ["'startingOffsetsByTimestampStrategy'"],
        ),
        (opts(failOnDataLoss="yes"), ["'failOnDataLoss'", "true or false"]),
        (opts(includeHeaders="1"), ["'includeHeaders'"]),
        (opts(minPartitions="0"), ["'minPartitions'", "positive"]),
        (opts(minPartitions="two"), ["'minPartitions'", "integer"]),
        (opts(maxRecordsPerPartition="-5"), ["'maxRecordsPerPartition'", "positive"]),
        (opts(maxOffsetsPerTrigger="0"), ["'maxOffsetsPerTrigger'"]),
        (opts(minOffsetsPerTrigger="9", maxOffsetsPerTrigger="5"), ["'minOffsetsPerTrigger'"]),
        (opts(maxTriggerDelay="soon"), ["'maxTriggerDelay'"]),
        (
            opts(kafka__auto__offset__reset="earliest"),
            ["'kafka.auto.offset.reset'", "startingOffsets"],
        ),
        (opts(kafka__enable__auto__commit="true"), ["'kafka.enable.auto.commit'"]),
        (opts(kafka__value__deserializer="x"), ["'kafka.value.deserializer'"]),
        (opts(kafka__interceptor__classes="x"), ["'kafka.interceptor.classes'"]),
        (opts(kafka__fetch__max__bytess="1"), ["'kafka.fetch.max.bytess'", "fetch.max.bytes"]),
        (opts(kafka__isolation__level="serializable"), ["'kafka.isolation.level'"]),
        (opts(commitOffsetsToGroup=" "), ["'commitOffsetsToGroup'"]),
    ],
)
def test_bad_options_name_the_option(options: dict[str, str], names: list[str]) -> None:
    with pytest.raises((SourceOptionError, KafkaOptionError)) as info:
        parse_source_options(options)
    for name in names:
        assert name in str(info.value)


def test_boundaries_in_the_connectors_order_of_preference() -> None:
    both = opts(
        startingTimestamp="5",
        startingOffsetsByTimestamp='{"t":{"0":7}}',
        startingOffsets="earliest",
    )
    assert parse_source_options(both).starting == GlobalTimestamp(5, "error")
    del both["startingTimestamp"]
    assert parse_source_options(both).starting == SpecificTimestamps({TP("t", 0): 7}, "error")
    del both["startingOffsetsByTimestamp"]
    assert parse_source_options(both).starting == Earliest()
    got = parse_source_options(
        opts(
            endingOffsets='{"t":{"1":-1,"0":10}}',
            startingOffsetsByTimestampStrategy="LATEST",
            endingTimestamp="9",
        )
    )
    assert got.ending == GlobalTimestamp(9, "latest")
    got = parse_source_options(
        opts(endingOffsets='{"t":{"1":-1,"0":10}}', startingOffsets="latest")
    )
    assert got.ending == SpecificOffsets({TP("t", 1): -1, TP("t", 0): 10})
    assert got.starting == Latest()


@pytest.mark.parametrize(
    ("extra", "names"),
    [
        ({"startingOffsets": "latest"}, ["'startingOffsets'", "latest"]),
        ({"startingOffsets": '{"t":{"0":-1}}'}, ["'startingOffsets'", "t-0"]),
        ({"endingOffsets": "earliest"}, ["'endingOffsets'", "earliest"]),
        ({"endingOffsets": '{"t":{"0":-2}}'}, ["'endingOffsets'", "t-0"]),
        (
            {"startingOffsets": '{"t":{"0":1}}', "endingOffsets": '{"t":{"1":5}}'},
            ["'startingOffsets'", "'endingOffsets'", "same partitions"],
        ),
        (
            {"startingOffsets": '{"t":{"0":9}}', "endingOffsets": '{"t":{"0":5}}'},
            ["t-0", "starts at 9"],
        ),
        (
            {
                "startingOffsetsByTimestamp": '{"t":{"0":9}}',
                "endingOffsetsByTimestamp": '{"t":{"0":5}}',
            },
            ["'startingOffsetsByTimestamp'", "starts at 9"],
        ),
        ({"commitOffsetsToGroup": "g"}, ["'commitOffsetsToGroup'", "streaming"]),
    ],
)
def test_batch_only_checks(extra: dict[str, str], names: list[str]) -> None:
    parse_source_options({**BASE, **extra})  # fine until the mode is known
    with pytest.raises(SourceOptionError) as info:
        parse_source_options({**BASE, **extra}, "batch")
    for name in names:
        assert name in str(info.value)


def test_batch_accepts_resolved_starts_before_ends_and_ignores_stream_limits() -> None:
    got = parse_source_options(
        opts(
            startingOffsets='{"t":{"0":-2,"1":3}}',
            endingOffsets='{"t":{"0":5,"1":-1}}',
            maxOffsetsPerTrigger="5",
            maxTriggerDelay="not parsed in batch queries",
        ),
        "batch",
    )
    assert got.max_trigger_delay_ms == 15 * 60 * 1000


@pytest.mark.parametrize("key", ["endingOffsets", "endingOffsetsByTimestamp"])
def test_streams_have_no_end(key: str) -> None:
    value = "latest" if key == "endingOffsets" else '{"t":{"0":1}}'
    with pytest.raises(SourceOptionError, match=f"'{key}' is not valid in streaming"):
        parse_source_options({**BASE, key: value}, "stream")
    # endingTimestamp is ignored by streams, as by the connector
    parse_source_options({**BASE, "endingTimestamp": "5"}, "stream")


@pytest.mark.parametrize(
    ("text", "ms"),
    [
        ("15m", 900_000),
        ("30s", 30_000),
        ("100ms", 100),
        ("2h", 7_200_000),
        ("1d", 86_400_000),
        ("500", 500),
        ("1min", 60_000),
        (" 3 S ", 3000),
        ("1500us", 1),
    ],
)
def test_time_strings_like_sparks(text: str, ms: int) -> None:
    assert time_string_ms("maxTriggerDelay", text) == ms


# -- offsets JSON ----------------------------------------------------------------
def test_offsets_json_is_ordered_so_equal_offsets_give_equal_text() -> None:
    a = {TP("b", 10): 5, TP("a", 2): 1, TP("b", 2): 7}
    b = dict(reversed(list(a.items())))
    assert json.dumps(offsets_to_json(a)) == json.dumps(offsets_to_json(b))
    assert json.dumps(offsets_to_json(a)) == '{"a": {"2": 1}, "b": {"2": 7, "10": 5}}'
    assert offsets_from_json(json.dumps(offsets_to_json(a)), "test") == a
    assert offsets_from_json({"a": {"0": 3}}, "test") == {TP("a", 0): 3}


@pytest.mark.parametrize("bad", ['{"a": [0]}', '{"a": {"0": -1}}', '{"a": {"x": 1}}', "[]", "nope"])
def test_offsets_from_json_refuses_what_it_did_not_write(bad: str) -> None:
    with pytest.raises(ValueError, match="not a kafkacore source offset"):
        offsets_from_json(bad, "checkpoint")


# -- ranges ------------------------------------------------------------------------
def R(frm: int, until: int, topic: str = "t", part: int = 0) -> OffsetRange:
    return OffsetRange(topic, part, frm, until)


def test_no_split_options_one_task_per_partition_with_data() -> None:
    ranges = [R(0, 10), R(5, 5, part=1), R(3, 4, part=2)]
    assert split_ranges(ranges, min_partitions=None, max_records_per_partition=None) == [
        R(0, 10),
        R(3, 4, part=2),
    ]
    assert split_ranges(ranges, min_partitions=2, max_records_per_partition=None) == [
        R(0, 10),
        R(3, 4, part=2),
    ]


def test_max_records_per_partition_cuts_even_pieces_last_takes_the_rest() -> None:
    got = split_ranges([R(0, 10)], min_partitions=None, max_records_per_partition=3)
    assert got == [R(0, 2), R(2, 4), R(4, 7), R(7, 10)]


def test_min_partitions_splits_big_ranges_in_proportion() -> None:
    got = split_ranges(
        [R(0, 100), R(0, 1, part=1)], min_partitions=3, max_records_per_partition=None
    )
    assert got == [R(0, 50), R(50, 100), R(0, 1, part=1)]


def test_min_partitions_rounds_half_up_like_java() -> None:
    # 5 / 10 * 5 = 2.5 pieces: Java's Math.round gives 3 (Python's round would give 2).
    got = split_ranges([R(0, 5), R(0, 5, part=1)], min_partitions=5, max_records_per_partition=None)
    assert [r.partition for r in got] == [0, 0, 0, 1, 1, 1]


def test_both_limits_cut_by_size_first() -> None:
    got = split_ranges([R(0, 8), R(0, 2, part=1)], min_partitions=6, max_records_per_partition=4)
    # 4 pieces after the size cut, then minPartitions 6 spreads over them.
    assert len(got) >= 6 and sum(r.size for r in got) == 10
    assert all(r.size <= 4 for r in got)


def test_batch_ranges_keep_earliest_latest_unresolved_unless_split() -> None:
    calls: list[dict[TopicPartition, int]] = []

    def resolve(offsets: Any) -> dict[TopicPartition, int]:
        calls.append(dict(offsets))
        return {tp: (0 if off == -2 else 90 if off == -1 else off) for tp, off in offsets.items()}

    start, end = {TP("t", 0): -2}, {TP("t", 0): -1}
    # earliest..latest is 1 "offset" wide before binding: maxRecordsPerPartition does not split it
    got = plan_batch_ranges(
        start, end, min_partitions=None, max_records_per_partition=10, resolve=resolve
    )
    assert got == [R(-2, -1)] and not calls
    got = plan_batch_ranges(
        start, end, min_partitions=3, max_records_per_partition=None, resolve=resolve
    )
    assert got == [R(-2, 30), R(30, 60), R(60, -1)]
    assert calls == [start, end]
    with pytest.raises(ValueError, match="after the ending offset"):
        plan_batch_ranges(
            {TP("t", 0): 9},
            {TP("t", 0): 5},
            min_partitions=None,
            max_records_per_partition=None,
            resolve=resolve,
        )


def test_stream_ranges_report_what_the_connector_reports() -> None:
    reports: list[str] = []
    got = stream_ranges(
        {TP("t", 0): 5, TP("t", 1): 9, TP("gone", 0): 3},
        {TP("t", 0): 8, TP("t", 1): 4, TP("t", 2): 6, TP("t", 3): 2},
        {TP("t", 2): 0},  # t-3 was deleted before its earliest offset was found
        report_data_loss=reports.append,
        min_partitions=None,
        max_records_per_partition=None,
    )
    assert got == [R(5, 8), R(0, 6, part=2)]
    assert len(reports) == 3
    assert "t-3" in reports[0] and "gone-0" in reports[1] and "t-1" in reports[2]
    reports.clear()
    stream_ranges(
        {},
        {TP("t", 0): 9},
        {TP("t", 0): 4},
        report_data_loss=reports.append,
        min_partitions=None,
        max_records_per_partition=None,
    )
    assert reports and "starts at offset 4 instead of 0" in reports[0]


def test_rate_limit_shares_in_proportion_rounding_small_shares_up() -> None:
    start = {TP("t", 0): 0, TP("t", 1): 0}
    assert rate_limit(40, start, {TP("t", 0): 100, TP("t", 1): 300}, {}) == {
        TP("t", 0): 10,
        TP("t", 1): 30,
    }
    assert rate_limit(10, start, {TP("t", 0): 1000, TP("t", 1): 1}, {}) == {
        TP("t", 0): 9,
        TP("t", 1): 1,
    }
    # A new partition starts where its earliest offset is; nothing new keeps the end.
    got = rate_limit(10, start, {TP("t", 0): 0, TP("t", 1): 0, TP("t", 2): 50}, {TP("t", 2): 20})
    assert got == {TP("t", 0): 0, TP("t", 1): 0, TP("t", 2): 30}


def test_trigger_delay_holds_until_enough_or_late() -> None:
    delay = TriggerDelay(min_records=10, max_delay_ms=1000)
    start = {TP("t", 0): 0}
    assert not delay.hold(start, {TP("t", 0): 1}, now_ms=50_000)  # the first never waits
    assert delay.hold(start, {TP("t", 0): 5}, now_ms=50_100)
    assert not delay.hold(start, {TP("t", 0): 10}, now_ms=50_200)
    assert delay.hold(start, {TP("t", 0): 1}, now_ms=51_100)
    assert not delay.hold(start, {TP("t", 0): 1}, now_ms=51_200)  # 1 s since the last batch


# -- Arrow -----------------------------------------------------------------------------
@pytest.mark.parametrize("headers", [False, True])
def test_arrow_schema_is_what_pyspark_demands(headers: bool) -> None:
    from pyspark.sql.pandas.types import to_arrow_schema

    assert to_arrow_schema(spark_schema(headers), timezone="UTC").equals(arrow_schema(headers))


def _batch() -> PartitionBatch:
    return PartitionBatch(
        topic="tö",
        partition=3,
        offsets=array("q", [5, 6, 9]),
        timestamps=array("q", [1_700_000_000_123, -1, 7]),
        keys=[b"k", None, b""],
        values=[None, b"v", b"x" * 100],
        headers=[(), (("a", b"1"), ("b", None)), (("c", b""),)],
        timestamp_type=1,
        leader_epoch=None,
    )


def test_record_batch_columns() -> None:
    import datetime as dt

    got = record_batch(_batch(), 3, True)
    assert got.schema.equals(arrow_schema(True))
    rows = got.to_pylist()
    assert [r["key"] for r in rows] == [b"k", None, b""]
    assert [r["value"] for r in rows] == [None, b"v", b"x" * 100]
    assert {r["topic"] for r in rows} == {"tö"} and {r["partition"] for r in rows} == {3}
    assert [r["offset"] for r in rows] == [5, 6, 9]
    assert {r["timestampType"] for r in rows} == {1}
    utc = dt.UTC
    assert rows[0]["timestamp"] == dt.datetime(2023, 11, 14, 22, 13, 20, 123000, tzinfo=utc)
    assert rows[1]["timestamp"] == dt.datetime(1969, 12, 31, 23, 59, 59, 999000, tzinfo=utc)
    assert [r["headers"] for r in rows] == [
        None,  # no headers: null, as the connector gives
        [{"key": "a", "value": b"1"}, {"key": "b", "value": None}],
        [{"key": "c", "value": b""}],
    ]
    head = record_batch(_batch(), 2, False)
    assert head.num_rows == 2 and head.schema.equals(arrow_schema(False))


def test_timestamps_beyond_sparks_range_are_refused() -> None:
    batch = _batch()
    batch.timestamps[2] = 2**62
    with pytest.raises(MalformedTimestampError, match="offset 9"):
        record_batch(batch, 3, False)


# -- driver lookups: the connector's retries ------------------------------------------
def test_lookups_retry_like_the_connector() -> None:
    from pyspark_kafkacore._source_admin import SourceAdmin, UnknownTopicError

    admin = SourceAdmin(
        parse_source_options(
            opts(**{"fetchOffset.numRetries": "3"}, **{"fetchOffset.retryIntervalMs": "0"})
        )
    )
    calls: list[int] = []

    def flaky() -> str:
        calls.append(1)
        if len(calls) < 3:
            raise ConnectionError("broker went away")
        return "answer"

    assert admin._retrying("test", flaky) == "answer" and len(calls) == 3
    calls.clear()

    def unknown() -> str:
        calls.append(1)
        raise UnknownTopicError("option 'subscribe': topic(s) ['x'] do not exist")

    with pytest.raises(UnknownTopicError):
        admin._retrying("test", unknown)
    assert len(calls) == 3  # a topic being created may be unknown for a moment
    calls.clear()

    def misuse() -> str:
        calls.append(1)
        raise SourceOptionError("option 'startingOffsets' must give an offset for ...")

    with pytest.raises(SourceOptionError):
        admin._retrying("test", misuse)
    assert len(calls) == 1  # the user's mistake does not get better by waiting


def test_lookups_wait_out_an_outage_of_a_cluster_they_reached() -> None:
    from kafkacore.errors import KafkaConnectionError, NoBrokersAvailable
    from pyspark_kafkacore._source_admin import SourceAdmin

    def admin(api_timeout_ms: str) -> SourceAdmin:
        options = {"fetchOffset.numRetries": "2", "fetchOffset.retryIntervalMs": "5"}
        return SourceAdmin(
            parse_source_options(
                opts(**options, **{"kafka.default.api.timeout.ms": api_timeout_ms})
            )
        )

    calls: list[int] = []

    def down_for(failures: int) -> Callable[[], str]:
        def lookup() -> str:
            calls.append(1)
            if 1 < len(calls) <= 1 + failures:
                raise KafkaConnectionError("connect to 127.0.0.1:9092 failed: ECONNREFUSED")
            return "offsets"

        return lookup

    # reached once, then five refused connects: more than the 2 attempts, inside the timeout
    reached = admin("60000")
    lookup = down_for(5)
    assert reached._retrying("test", lookup) == "offsets"
    assert reached._retrying("test", lookup) == "offsets" and len(calls) == 7
    # past kafka.default.api.timeout.ms (1 ms; retries 5 ms apart) an attempt counts
    calls.clear()
    short = admin("1")
    lookup = down_for(5)
    short._retrying("test", lookup)
    with pytest.raises(KafkaConnectionError):
        short._retrying("test", lookup)
    assert len(calls) < 7
    # a cluster never reached fails its first attempt, without the retries:
    # the client already waited one request timeout for it (issue 26)
    calls.clear()

    def never() -> str:
        calls.append(1)
        raise NoBrokersAvailable("no bootstrap server answered (127.0.0.1:1)")

    with pytest.raises(NoBrokersAvailable):
        admin("60000")._retrying("test", never)
    assert len(calls) == 1
