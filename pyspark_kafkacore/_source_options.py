"""The read options of ``format("kafkacore")``, checked once, before any data moves.

Theory of operation
-------------------
Names, defaults and meanings are those of Spark's JVM connector
(``KafkaSourceProvider``); names are case-insensitive (Spark lower-cases
them for Python data sources, so messages use the canonical spelling).
:func:`parse_source_options` turns the string map into a frozen
:class:`SourceOptions`. ``mode`` says which query reads: ``"any"`` is what
``schema()`` can check before Spark says whether the query is a batch or a
stream; ``"batch"`` and ``"stream"`` add the checks the connector makes when
it builds a batch scan or a micro-batch stream (a batch cannot start at
latest; a stream has no end offsets).

Every problem raises :class:`SourceOptionError` (a ``ValueError``) naming
the option and saying what to write instead. ``kafka.*`` options go through
:func:`pyspark_kafkacore._kafka_params.kafka_options` (role ``consumer``).
"""

from __future__ import annotations

import logging
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

from kafkacore.client import ClientConfig, TopicPartition
from kafkacore.consumer import ConsumerConfig
from kafkacore.errors import LocalProtocolError

from ._kafka_params import kafka_options
from ._offsets import (
    EARLIEST,
    LATEST,
    Earliest,
    GlobalTimestamp,
    Latest,
    NoMatchStrategy,
    OffsetLimit,
    SourceOptionError,
    SpecificOffsets,
    SpecificTimestamps,
    parse_assign,
    parse_partition_values,
)

__all__ = [
    "Assign",
    "Mode",
    "SourceOptionError",
    "SourceOptions",
    "Strategy",
    "Subscribe",
    "SubscribePattern",
    "parse_source_options",
]

_log = logging.getLogger("pyspark_kafkacore")

Mode = Literal["any", "batch", "stream"]

#: The connector's default ``kafkaConsumer.pollTimeoutMs`` is ``spark.network.timeout``
#: (120 s unless changed); a Python data source cannot read the Spark conf, so 120 s.
DEFAULT_POLL_TIMEOUT_MS = 120_000
DEFAULT_MAX_TRIGGER_DELAY = "15m"

# Canonical spellings, by lower-cased name (Spark hands Python sources lower-cased keys).
_NAMES = {
    name.lower(): name
    for name in (
        "subscribe",
        "subscribePattern",
        "assign",
        "startingOffsets",
        "endingOffsets",
        "startingOffsetsByTimestamp",
        "endingOffsetsByTimestamp",
        "startingTimestamp",
        "endingTimestamp",
        "startingOffsetsByTimestampStrategy",
        "failOnDataLoss",
        "minPartitions",
        "maxRecordsPerPartition",
        "maxOffsetsPerTrigger",
        "minOffsetsPerTrigger",
        "maxTriggerDelay",
        "kafkaConsumer.pollTimeoutMs",
        "fetchOffset.numRetries",
        "fetchOffset.retryIntervalMs",
        "groupIdPrefix",
        "includeHeaders",
        "commitOffsetsToGroup",
    )
}
_STRATEGIES = ("subscribe", "subscribepattern", "assign")


@dataclass(frozen=True, slots=True)
class Subscribe:
    """A fixed list of topics (option ``subscribe``)."""

    topics: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class SubscribePattern:
    """Every topic whose name contains a match of ``pattern`` (``subscribePattern``;
    the connector uses Java's ``Regex.findFirstIn``, a search, not a full match)."""

    pattern: str

    def matches(self, topic: str) -> bool:
        return re.search(self.pattern, topic) is not None


@dataclass(frozen=True, slots=True)
class Assign:
    """Exactly these partitions (option ``assign``)."""

    partitions: tuple[TopicPartition, ...]


Strategy = Subscribe | SubscribePattern | Assign


@dataclass(frozen=True, slots=True, kw_only=True)
class SourceOptions:
    """Every read option, typed. ``starting``/``ending`` are None when not given
    (the default depends on the mode: batch earliest..latest, stream latest)."""

    strategy: Strategy
    #: kafkacore keyword options from ``kafka.*`` (``bootstrap_servers``, TLS, SASL, ...),
    #: without ``group_id`` (see :attr:`group_id`).
    kafka: Mapping[str, Any] = field(default_factory=dict)
    starting: OffsetLimit | None = None
    ending: OffsetLimit | None = None
    fail_on_data_loss: bool = True
    min_partitions: int | None = None
    max_records_per_partition: int | None = None
    max_offsets_per_trigger: int | None = None
    min_offsets_per_trigger: int | None = None
    max_trigger_delay_ms: int = 15 * 60 * 1000
    poll_timeout_ms: int = DEFAULT_POLL_TIMEOUT_MS
    fetch_offset_num_retries: int = 3
    fetch_offset_retry_interval_ms: int = 1000
    group_id_prefix: str | None = None
    #: ``kafka.group.id`` when the user set it (the connector warns and uses it).
    group_id: str | None = None
    include_headers: bool = False
    #: Beyond the connector: commit each finished micro-batch's end offsets to this group.
    commit_offsets_to_group: str | None = None

    @property
    def read_committed(self) -> bool:
        return self.kafka.get("isolation_level") == "read_committed"


def _name(key: str) -> str:
    return _NAMES.get(key.lower(), key)


def _bool(opts: Mapping[str, str], key: str, default: bool) -> bool:
    if key not in opts:
        return default
    text = opts[key].strip().lower()
    if text in ("true", "false"):
        return text == "true"
    raise SourceOptionError(f"option {_name(key)!r}: expected true or false, got {opts[key]!r}")


def _number(
    opts: Mapping[str, str], key: str, *, positive: bool = False, minimum: int | None = None
) -> int | None:
    if key not in opts:
        return None
    try:
        value = int(opts[key].strip())
    except ValueError:
        raise SourceOptionError(
            f"option {_name(key)!r}: expected an integer, got {opts[key]!r}"
        ) from None
    if positive and value <= 0:
        raise SourceOptionError(f"option {_name(key)!r}: must be positive, got {value}")
    if minimum is not None and value < minimum:
        raise SourceOptionError(f"option {_name(key)!r}: must be >= {minimum}, got {value}")
    return value


_TIME_UNITS_MS = {"us": 0.001, "ms": 1, "s": 1000, "m": 60_000, "min": 60_000, "h": 3_600_000}
_TIME_UNITS_MS["d"] = 86_400_000


def time_string_ms(option: str, text: str) -> int:
    """Spark's time strings (``15m``, ``30s``, ``100ms``, ``2h``, ``1d``; no unit: ms)."""
    match = re.fullmatch(r"(-?\d+)\s*([a-z]+)?", text.strip().lower())
    if match is None or (match.group(2) and match.group(2) not in _TIME_UNITS_MS):
        raise SourceOptionError(
            f"option {option!r}: expected a duration such as '15m', '30s' or '500ms', got {text!r}"
        )
    return int(int(match.group(1)) * _TIME_UNITS_MS[match.group(2) or "ms"])


def _strategy(opts: Mapping[str, str]) -> Strategy:
    given = [k for k in _STRATEGIES if k in opts]
    names = "'subscribe', 'subscribePattern', 'assign'"
    if not given:
        raise SourceOptionError(f"one of the options {names} must be given to read from Kafka")
    if len(given) > 1:
        both = ", ".join(repr(_name(k)) for k in given)
        raise SourceOptionError(f"only one of the options {names} can be given; got {both}")
    key = given[0]
    value = opts[key]
    if key == "assign":
        if not value.strip().startswith("{"):
            raise SourceOptionError(
                f"option 'assign': no partitions to assign in {value!r}; expected JSON "
                'such as {"topicA":[0,1]}'
            )
        return Assign(parse_assign("assign", value))
    if key == "subscribe":
        topics = tuple(dict.fromkeys(t.strip() for t in value.split(",") if t.strip()))
        if not topics:
            raise SourceOptionError(f"option 'subscribe': no topics to subscribe to in {value!r}")
        return Subscribe(topics)
    pattern = value.strip()
    if not pattern:
        raise SourceOptionError(f"option 'subscribePattern': the pattern is empty ({value!r})")
    try:
        re.compile(pattern)
    except re.error as exc:
        raise SourceOptionError(
            f"option 'subscribePattern': {pattern!r} is not a valid pattern: {exc}"
        ) from None
    return SubscribePattern(pattern)


def _no_match(opts: Mapping[str, str]) -> NoMatchStrategy:
    key = "startingoffsetsbytimestampstrategy"
    text = opts.get(key, "error").strip().lower()
    if text == "error":
        return "error"
    if text == "latest":
        return "latest"
    raise SourceOptionError(
        f"option {_name(key)!r}: expected 'error' or 'latest', got {opts[key]!r}"
    )


def _limit(opts: Mapping[str, str], side: Literal["starting", "ending"]) -> OffsetLimit | None:
    """The connector's order of preference: one timestamp, per-partition timestamps, offsets."""
    no_match = _no_match(opts)
    key = f"{side}timestamp"
    if key in opts:
        number = _number(opts, key)
        assert number is not None
        if number < 0:
            raise SourceOptionError(f"option {_name(key)!r}: must be >= 0, got {number}")
        return GlobalTimestamp(number, no_match)
    key = f"{side}offsetsbytimestamp"
    if key in opts:
        return SpecificTimestamps(
            parse_partition_values(_name(key), opts[key], timestamps=True), no_match
        )
    key = f"{side}offsets"
    if key in opts:
        text = opts[key].strip()
        if text.lower() == "latest":
            return Latest()
        if text.lower() == "earliest":
            return Earliest()
        return SpecificOffsets(parse_partition_values(_name(key), text, timestamps=False))
    return None


def _check_batch(starting: OffsetLimit | None, ending: OffsetLimit | None) -> None:
    if isinstance(starting, Latest):
        raise SourceOptionError(
            "option 'startingOffsets': a batch query cannot start at 'latest'; use "
            "'earliest', offsets or a timestamp"
        )
    if isinstance(starting, SpecificOffsets):
        for tp, off in starting.offsets.items():
            if off == LATEST:
                raise SourceOptionError(
                    f"option 'startingOffsets': {tp.topic}-{tp.partition} cannot start at "
                    "latest (-1) in a batch query"
                )
    if isinstance(ending, Earliest):
        raise SourceOptionError(
            "option 'endingOffsets': a batch query cannot end at 'earliest'; use 'latest', "
            "offsets or a timestamp"
        )
    if isinstance(ending, SpecificOffsets):
        for tp, off in ending.offsets.items():
            if off == EARLIEST:
                raise SourceOptionError(
                    f"option 'endingOffsets': {tp.topic}-{tp.partition} cannot end at "
                    "earliest (-2) in a batch query"
                )
    # Same partitions on both sides, start not after end (the connector's
    # checkOffsetLimitValidity); -2/-1 are resolved later and not compared.
    pairs: list[tuple[str, Mapping[TopicPartition, int], Mapping[TopicPartition, int]]] = []
    if isinstance(starting, SpecificOffsets) and isinstance(ending, SpecificOffsets):
        pairs.append(("Offsets", starting.offsets, ending.offsets))
    if isinstance(starting, SpecificTimestamps) and isinstance(ending, SpecificTimestamps):
        pairs.append(("OffsetsByTimestamp", starting.timestamps, ending.timestamps))
    for what, start, end in pairs:
        if set(start) != set(end):
            raise SourceOptionError(
                f"options 'starting{what}' and 'ending{what}' must name the same partitions; "
                f"starting has {_tps(start)}, ending has {_tps(end)}"
            )
        for tp, first in start.items():
            last = end[tp]
            if first > last >= 0 and first >= 0:
                raise SourceOptionError(
                    f"options 'starting{what}' and 'ending{what}': {tp.topic}-{tp.partition} "
                    f"starts at {first}, after its end {last}"
                )


def _tps(values: Mapping[TopicPartition, int]) -> str:
    return "[" + ", ".join(f"{tp.topic}-{tp.partition}" for tp in sorted(values)) + "]"


def _check_kafka_values(kafka: Mapping[str, Any]) -> None:
    """Let kafkacore's own config records judge the values now, not in a task later."""
    consumer = {k: v for k, v in kafka.items() if k in ConsumerConfig.__dataclass_fields__}
    client = {k: v for k, v in kafka.items() if k not in consumer}
    try:
        ClientConfig(**client)
        ConsumerConfig(**consumer)
    except (LocalProtocolError, ValueError, TypeError) as exc:
        named = re.search(r"Config\.(\w+)", str(exc))
        option = f"kafka.{named.group(1).replace('_', '.')}" if named else "kafka.*"
        raise SourceOptionError(f"option {option!r}: {exc}") from None


def parse_source_options(options: Mapping[str, str], mode: Mode = "any") -> SourceOptions:
    """Check ``options`` (Spark's case-insensitive map, or a dict) and type them."""
    opts = {str(k).lower(): "" if v is None else str(v) for k, v in options.items()}
    strategy = _strategy(opts)
    if "kafka.bootstrap.servers" not in opts or not opts["kafka.bootstrap.servers"].strip():
        raise SourceOptionError(
            "option 'kafka.bootstrap.servers' must be given: the brokers to read from"
        )
    kafka = kafka_options(opts, "consumer")
    _check_kafka_values(kafka)
    group_id = kafka.pop("group_id", None)
    if group_id is not None:
        _log.warning(
            "option 'kafka.group.id' is set: concurrent queries with the same group id "
            "interfere when they commit to it (see 'commitOffsetsToGroup')"
        )
    for key in opts:
        if not key.startswith("kafka.") and key not in _NAMES and key != "path":
            _log.warning("option %r is not a kafkacore source option; it is ignored", key)
    starting = _limit(opts, "starting")
    ending = _limit(opts, "ending")
    min_offsets = _number(opts, "minoffsetspertrigger", minimum=0)
    max_offsets = _number(opts, "maxoffsetspertrigger", positive=True)
    if min_offsets is not None and max_offsets is not None and min_offsets > max_offsets:
        raise SourceOptionError(
            f"option 'minOffsetsPerTrigger' ({min_offsets}) is above 'maxOffsetsPerTrigger' "
            f"({max_offsets})"
        )
    delay_text = opts.get("maxtriggerdelay", DEFAULT_MAX_TRIGGER_DELAY)
    poll_timeout = _number(opts, "kafkaconsumer.polltimeoutms", positive=True)
    retries = _number(opts, "fetchoffset.numretries", positive=True)
    interval = _number(opts, "fetchoffset.retryintervalms", minimum=0)
    commit_group = opts.get("commitoffsetstogroup")
    if commit_group is not None and not commit_group.strip():
        raise SourceOptionError("option 'commitOffsetsToGroup': the group id is empty")
    result = SourceOptions(
        strategy=strategy,
        kafka=kafka,
        starting=starting,
        ending=ending,
        fail_on_data_loss=_bool(opts, "failondataloss", True),
        min_partitions=_number(opts, "minpartitions", positive=True),
        max_records_per_partition=_number(opts, "maxrecordsperpartition", positive=True),
        max_offsets_per_trigger=max_offsets,
        min_offsets_per_trigger=min_offsets,
        # Parsed only where it means something (the connector ignores it in batch queries).
        max_trigger_delay_ms=time_string_ms(
            "maxTriggerDelay", DEFAULT_MAX_TRIGGER_DELAY if mode == "batch" else delay_text
        ),
        poll_timeout_ms=DEFAULT_POLL_TIMEOUT_MS if poll_timeout is None else poll_timeout,
        fetch_offset_num_retries=3 if retries is None else retries,
        fetch_offset_retry_interval_ms=1000 if interval is None else interval,
        group_id_prefix=opts.get("groupidprefix"),
        group_id=group_id,
        include_headers=_bool(opts, "includeheaders", False),
        commit_offsets_to_group=None if commit_group is None else commit_group.strip(),
    )
    if mode == "batch":
        _check_batch(starting, ending)
        for key in ("maxoffsetspertrigger", "minoffsetspertrigger", "maxtriggerdelay"):
            if key in opts:
                _log.warning("option %r is ignored in batch queries", _name(key))
        if commit_group is not None:
            raise SourceOptionError(
                "option 'commitOffsetsToGroup' applies to streaming queries only "
                "(a batch query has no progress to commit)"
            )
    elif mode == "stream":
        for key in ("endingoffsets", "endingoffsetsbytimestamp"):
            if key in opts:
                raise SourceOptionError(
                    f"option {_name(key)!r} is not valid in streaming queries (a stream has no end)"
                )
        if "endingtimestamp" in opts:
            _log.warning("option 'endingTimestamp' is ignored in streaming queries")
    return result
