"""The offsets a user hands to a commit, in every shape the clients' users write them.

``commit(offsets)``, ``send_offsets_to_transaction(offsets, group)`` and their
peers' spellings take ``{partition: offset}`` where the offset is an ``int``,
an :class:`~kafkacore.consumer.OffsetAndMetadata`, or a tuple ``(offset,
metadata[, leader_epoch])``: kafka-python's and aiokafka's
``OffsetAndMetadata`` are such tuples, and kafka-python documents
``commit({tp: (offset, "metadata")})``. One function turns each into an
``OffsetAndMetadata`` and checks it at the call, so a bad value fails the
caller at once, naming the partition, instead of failing later as a request
that cannot be encoded.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeAlias

from kafkacore.client.metadata import TopicPartition
from kafkacore.consumer.events import OffsetAndMetadata
from kafkacore.errors import InvalidArgumentError

__all__ = ["OffsetsArg", "commit_offsets"]

#: What a commit call takes: see the module docstring.
OffsetsArg: TypeAlias = Mapping[Any, Any]


def _partition(what: str, key: object) -> TopicPartition:
    if (
        isinstance(key, tuple)
        and len(key) == 2
        and isinstance(key[0], str)
        and isinstance(key[1], int)
        and not isinstance(key[1], bool)
    ):
        return TopicPartition(key[0], key[1])
    raise InvalidArgumentError(f"{what}: {key!r} is not a TopicPartition (topic, partition)")


def _offset(what: str, tp: TopicPartition, value: object) -> OffsetAndMetadata:
    if isinstance(value, int) and not isinstance(value, bool):
        offset, metadata, epoch = value, "", None
    elif isinstance(value, tuple) and 1 <= len(value) <= 3:
        # (offset,), (offset, metadata) or (offset, metadata, leader_epoch)
        full: tuple[Any, ...] = (*value, *("", None)[len(value) - 1 :])
        offset, metadata, epoch = full
    else:
        raise InvalidArgumentError(
            f"{what}: the offset for {tp} is {value!r}; give an int, an OffsetAndMetadata "
            "or (offset, metadata)"
        )
    if not isinstance(offset, int) or isinstance(offset, bool) or offset < 0:
        raise InvalidArgumentError(f"{what}: offset {offset!r} for {tp} must be an int >= 0")
    if metadata is None:
        metadata = ""
    if not isinstance(metadata, str):
        raise InvalidArgumentError(f"{what}: metadata for {tp} must be a str, got {metadata!r}")
    if epoch is not None and (not isinstance(epoch, int) or isinstance(epoch, bool)):
        raise InvalidArgumentError(f"{what}: leader epoch for {tp} must be an int, got {epoch!r}")
    # -1 is "no epoch" on the wire and in kafka-python's OffsetAndMetadata default.
    return OffsetAndMetadata(offset, metadata, None if epoch is None or epoch < 0 else epoch)


def commit_offsets(what: str, offsets: object) -> dict[TopicPartition, OffsetAndMetadata]:
    """``offsets`` as ``{TopicPartition: OffsetAndMetadata}``, each checked (see the module)."""
    if not isinstance(offsets, Mapping):
        raise InvalidArgumentError(
            f"{what}: offsets must be a mapping {{TopicPartition: offset}}, "
            f"got {type(offsets).__name__}"
        )
    out: dict[TopicPartition, OffsetAndMetadata] = {}
    for key, value in offsets.items():
        tp = _partition(what, key)
        out[tp] = _offset(what, tp, value)
    return out
