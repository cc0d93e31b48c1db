"""Where the records of one ``append_many`` call go: pure functions over columns.

Theory of operation
-------------------
A batch call brings its records as columns (values, optional keys, the
size charged per record). They are cut into :data:`Piece` s, one per
destination partition, keeping the records' order within each piece:

* a partition named by the caller takes everything (:func:`whole`);
* keyed records go where Java's murmur2 sends each key; records without a
  key inside a keyed call follow the sticky partitioner (:func:`by_key`);
* unkeyed records are cut into pieces of about one batch and the sticky
  partitioner (KIP-480) picks a partition per piece, as it would record by
  record, so one big call spreads over partitions (:func:`by_size`).

The functions decide nothing about batches or memory; :class:`ColumnPlacer`
appends each piece to its partition's queue, in batches of up to its
``limit`` (a batch call has its records at hand; bigger batches mean fewer
requests), and registers the new batches with the ledger.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from kafkacore.client import TopicPartition
from kafkacore.partitioner import DefaultPartitioner, partition_for_key
from kafkacore.producer.accumulator import RecordAccumulator
from kafkacore.producer.ledger import DeliveryLedger
from kafkacore.producer.transaction import TransactionManager

__all__ = ["ColumnPlacer", "Piece", "by_key", "by_size", "whole"]

Values = Sequence[bytes | None]
#: (partition, values, keys or None, sizes) of records bound for one partition.
Piece = tuple[int, Values, Values | None, list[int]]


def whole(partition: int, values: Values, keys: Values | None, sizes: list[int]) -> list[Piece]:
    return [(partition, values, keys, sizes)]


def by_key(
    values: Values,
    keys: Values,
    sizes: list[int],
    count: int,
    sticky: Callable[[], int],
) -> list[Piece]:
    """One piece per partition: keys hashed over ``count`` partitions, no key to ``sticky()``."""
    groups: dict[int, list[int]] = {}
    for i, k in enumerate(keys):
        p = partition_for_key(k, count) if k is not None else sticky()
        groups.setdefault(p, []).append(i)
    return [
        (p, [values[i] for i in idx], [keys[i] for i in idx], [sizes[i] for i in idx])
        for p, idx in groups.items()
    ]


def by_size(
    values: Values,
    keys: Values | None,
    sizes: list[int],
    limit: int,
    pick: Callable[[int], int],
) -> list[Piece]:
    """Consecutive pieces of about ``limit`` bytes; ``pick(size)`` names each one's partition."""
    pieces: list[Piece] = []
    start, size, last = 0, 0, len(sizes) - 1
    for i, record in enumerate(sizes):
        size += record
        if size >= limit or i == last:
            end = i + 1
            piece_keys = None if keys is None else keys[start:end]
            pieces.append((pick(size), values[start:end], piece_keys, sizes[start:end]))
            start, size = end, 0
    return pieces


#: The sticky partitioner's choice for a topic: (topic, key, partition count) -> partition.
Choose = Callable[[str, bytes | None, int], int]


class ColumnPlacer:
    """Appends the records of one ``append_many`` call where :func:`by_key`,
    :func:`by_size` or :func:`whole` sends them."""

    __slots__ = ("_acc", "_choose", "_ignore_keys", "_ledger", "_partitioner", "_txn", "limit")

    def __init__(
        self,
        acc: RecordAccumulator,
        partitioner: DefaultPartitioner,
        ledger: DeliveryLedger,
        txn: TransactionManager | None,
        choose: Choose,
        *,
        limit: int,
        ignore_keys: bool,
    ) -> None:
        self._acc = acc
        self._partitioner = partitioner
        self._ledger = ledger
        self._txn = txn
        self._choose = choose
        self.limit = limit
        self._ignore_keys = ignore_keys

    def place(
        self,
        topic: str,
        values: Values,
        keys: Values | None,
        sizes: list[int],
        partition: int | None,
        count: int,
        timestamp: int,
        token: object,
        now: float,
        age: int = 0,
    ) -> None:
        """Append the columns to ``topic`` (``count`` partitions; ``partition`` < count).

        ``age``: the records waited for metadata since that append (for flush).
        """
        keyed = False
        if partition is not None:
            pieces = whole(partition, values, keys, sizes)
        elif keys is not None and not self._ignore_keys:
            keyed = True
            pieces = by_key(values, keys, sizes, count, lambda: self._choose(topic, None, count))
        else:
            pieces = by_size(values, keys, sizes, self.limit, lambda n: self._pick(topic, count, n))
        acc = self._acc
        for p, vals, ks, szs in pieces:
            tp = TopicPartition(topic, p)
            if self._txn is not None:
                self._txn.need(tp)
            q = acc.queue(tp)
            last = q.batches[-1].id if q.batches else 0
            total = acc.append_many(tp, vals, ks, szs, timestamp, token, now, limit=self.limit)
            self._ledger.track_new_batches(q, last, age)
            if keyed:
                self._partitioner.record_appended(topic, p, total)

    def _pick(self, topic: str, count: int, size: int) -> int:
        """The sticky partitioner's choice for ``size`` more unkeyed bytes (KIP-480)."""
        p = self._choose(topic, None, count)
        self._partitioner.record_appended(topic, p, size)
        return p
