"""Where the records of one append_many call go: the pure cuts and ColumnPlacer."""

from __future__ import annotations

import random
from collections.abc import Iterator

from kafkacore.client import TopicPartition
from kafkacore.partitioner import DefaultPartitioner, partition_for_key
from kafkacore.producer import ProducerConfig
from kafkacore.producer.accumulator import RecordAccumulator
from kafkacore.producer.ledger import DeliveryLedger
from kafkacore.producer.placement import ColumnPlacer, by_key, by_size, whole
from kafkacore.producer.transaction import TransactionManager


def _counter(start: int = 0) -> Iterator[int]:
    n = start
    while True:
        yield n
        n += 1


def test_whole_keeps_everything_for_the_named_partition() -> None:
    values, keys = [b"a", b"b"], [b"k", None]
    assert whole(2, values, keys, [22, 21]) == [(2, values, keys, [22, 21])]


def test_by_key_hashes_keys_and_sends_null_keys_to_the_sticky_choice() -> None:
    keys = [b"user-1", None, b"user-2", b"user-1", None]
    values = [b"v%d" % i for i in range(5)]
    sticky = iter([7, 7])
    pieces = by_key(values, keys, [30, 31, 32, 33, 34], 8, lambda: next(sticky))
    where = {p: (vs, ks, szs) for p, vs, ks, szs in pieces}
    p1, p2 = partition_for_key(b"user-1", 8), partition_for_key(b"user-2", 8)
    assert where[p1][0][-1] == b"v3" and where[p1][1] == [b"user-1", b"user-1"]
    assert b"v2" in where[p2][0]
    assert where[7] == ([b"v1", b"v4"], [None, None], [31, 34])
    # Order within each partition is the order of the call.
    assert sum(len(vs) for _, vs, _, _ in pieces) == 5


def test_by_size_cuts_pieces_of_about_the_limit_and_asks_one_partition_each() -> None:
    asked: list[int] = []

    def pick(size: int) -> int:
        asked.append(size)
        return len(asked) - 1

    values = [b"x"] * 7
    pieces = by_size(values, None, [40] * 7, 100, pick)
    assert [(p, len(vs), ks, szs) for p, vs, ks, szs in pieces] == [
        (0, 3, None, [40] * 3),
        (1, 3, None, [40] * 3),
        (2, 1, None, [40]),  # the remainder
    ]
    assert asked == [120, 120, 40]
    keyed = by_size(values[:2], [b"a", b"b"], [40, 40], 100, pick)
    assert keyed == [(3, [b"x", b"x"], [b"a", b"b"], [40, 40])]


class _Placer:
    def __init__(self, *, ignore_keys: bool = False, txn: TransactionManager | None = None):
        cfg = ProducerConfig(batch_size=100)
        self.acc = RecordAccumulator(cfg)
        self.ledger = DeliveryLedger(self.acc, lambda e: None, lambda b, e: None)
        self.partitioner = DefaultPartitioner(rng=random.Random(0), batch_size=100)
        self.sticky = _counter()
        self.chosen: list[tuple[str, bytes | None, int]] = []
        self.placer = ColumnPlacer(
            self.acc, self.partitioner, self.ledger, txn, self.choose, limit=100,
            ignore_keys=ignore_keys,
        )  # fmt: skip

    def choose(self, topic: str, key: bytes | None, count: int) -> int:
        self.chosen.append((topic, key, count))
        return next(self.sticky) % count

    def counts(self) -> dict[int, list[int]]:
        return {
            tp.partition: [b.record_count for b in q.batches] for tp, q in self.acc.queues.items()
        }


def test_a_named_partition_takes_all_in_batches_of_the_limit() -> None:
    f = _Placer()
    f.placer.place("t", [b"v"] * 5, None, [40] * 5, 1, 3, 9, "tok", 0.0)
    assert f.counts() == {1: [2, 2, 1]} and f.chosen == []
    assert f.ledger.incomplete == {b.id: b.id for b in f.acc.all_batches()}


def test_unkeyed_columns_spread_over_sticky_choices() -> None:
    f = _Placer()
    f.placer.place("t", [b"v"] * 6, None, [40] * 6, None, 3, 9, "tok", 0.0)
    assert f.chosen == [("t", None, 3)] * 2
    assert f.counts() == {0: [2, 1], 1: [2, 1]}


def test_keyed_columns_follow_their_keys_unless_keys_are_ignored() -> None:
    keys = [b"a", b"b", b"a", None]
    f = _Placer()
    f.placer.place("t", [b"v"] * 4, keys, [40] * 4, None, 4, 9, "tok", 0.0)
    expected: dict[int, int] = {}
    for k in (b"a", b"b", b"a"):
        p = partition_for_key(k, 4)
        expected[p] = expected.get(p, 0) + 1
    expected[0] = expected.get(0, 0) + 1  # the null key: the sticky choice (0)
    assert {p: sum(c) for p, c in f.counts().items()} == expected
    ignoring = _Placer(ignore_keys=True)
    ignoring.placer.place("t", [b"v"] * 4, keys, [40] * 4, None, 4, 9, "tok", 0.0)
    assert ignoring.chosen == [("t", None, 4)] * 2  # cut by size instead


def test_placed_records_that_waited_make_their_batches_as_old() -> None:
    f = _Placer()
    f.placer.place("t", [b"v"], None, [40], 0, 1, 9, "a", 0.0)
    (first,) = f.acc.all_batches()
    f.placer.place("t", [b"v"] * 3, None, [40] * 3, 0, 1, 9, "b", 0.0, age=1)
    ages = {b.id: f.ledger.incomplete[b.id] for b in f.acc.all_batches()}
    assert ages == {first.id: 1, first.id + 1: 1}


def test_a_transaction_learns_the_partitions_that_get_records() -> None:
    txn = TransactionManager("tx")
    f = _Placer(txn=txn)
    f.placer.place("t", [b"v"], None, [40], 2, 3, 9, "tok", 0.0)
    assert txn.pending == {TopicPartition("t", 2)}
