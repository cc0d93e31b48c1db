"""Pure tests of the partitioners: fixed vectors, sticky state machine, round robin, user hook."""

from __future__ import annotations

import random
from collections import Counter
from collections.abc import Sequence

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kafkacore.partitioner import (
    DefaultPartitioner,
    FunctionPartitioner,
    RoundRobinPartitioner,
    StickyState,
    murmur2,
    partition_for_key,
    to_positive,
)

# Printed by org.apache.kafka.common.utils.Utils.murmur2 (kafka-clients 4.3.1);
# the java-marked test recomputes thousands more at test time.
JAVA_MURMUR2 = {
    b"": 275646681,
    b"a": -1563381124,
    b"ab": 316155434,
    b"abc": 479470107,
    b"abcd": -1323649548,
    b"abcde": 461995741,
    b"\xff\xff\xff": 1548199422,
    b"kafka": -798503068,
    b"21": -973932308,
}


@pytest.mark.parametrize(("key", "expected"), sorted(JAVA_MURMUR2.items()))
def test_murmur2_fixed_vectors(key: bytes, expected: int) -> None:
    assert murmur2(key) == expected
    assert murmur2(bytearray(key)) == expected
    assert murmur2(memoryview(key)) == expected


def test_murmur2_accepts_non_byte_memoryview() -> None:
    words = memoryview(b"abcd").cast("I")
    assert murmur2(words) == JAVA_MURMUR2[b"abcd"]


@given(st.binary(max_size=64), st.integers(1, 10_000))
def test_partition_for_key_in_range_and_stable(key: bytes, n: int) -> None:
    p = partition_for_key(key, n)
    assert 0 <= p < n
    assert p == to_positive(murmur2(key)) % n
    assert -(2**31) <= murmur2(key) < 2**31


def test_to_positive_is_not_abs() -> None:
    assert to_positive(-(2**31)) == 0
    assert to_positive(-1) == 2**31 - 1


def test_partition_for_key_rejects_empty_topic() -> None:
    with pytest.raises(ValueError, match="partitions_count"):
        partition_for_key(b"k", 0)


def test_keyed_records_ignore_availability() -> None:
    part = DefaultPartitioner(rng=random.Random(1))
    assert part.partition("t", b"kafka", 12, [0]) == partition_for_key(b"kafka", 12)


def test_ignore_keys_spreads_keyed_records_like_unkeyed() -> None:
    part = DefaultPartitioner(rng=random.Random(1), ignore_keys=True, batch_size=10)
    first = part.partition("t", b"kafka", 12, list(range(12)))
    assert part.state("t") == (StickyState.STUCK, first, 0)


def test_sticky_switches_after_batch_size() -> None:
    part = DefaultPartitioner(rng=random.Random(7), batch_size=100)
    available = list(range(6))
    assert part.state("t") == (StickyState.UNCHOSEN, -1, 0)
    p = part.partition("t", None, 6, available)
    for _ in range(9):
        assert part.partition("t", None, 6, available) == p
        part.record_appended("t", p, 10)
    assert part.state("t") == (StickyState.STUCK, p, 90)
    part.record_appended("t", p, 10)
    assert part.state("t") == (StickyState.UNCHOSEN, -1, 0)
    part.partition("t", None, 6, available)
    assert part.state("t")[0] is StickyState.STUCK


def test_lingering_batch_postpones_switch_up_to_twice_batch_size() -> None:
    part = DefaultPartitioner(rng=random.Random(7), batch_size=100)
    p = part.partition("t", None, 4, [0, 1, 2, 3])
    part.record_appended("t", p, 150, batch_ready=False)
    assert part.state("t")[0] is StickyState.STUCK
    part.record_appended("t", p, 50, batch_ready=False)
    assert part.state("t")[0] is StickyState.UNCHOSEN


def test_appends_to_other_partitions_do_not_count() -> None:
    part = DefaultPartitioner(rng=random.Random(3), batch_size=10)
    p = part.partition("t", None, 4, [0, 1, 2, 3])
    part.record_appended("t", (p + 1) % 4, 1000)
    part.record_appended("other", p, 1000)
    assert part.state("t") == (StickyState.STUCK, p, 0)


@settings(max_examples=50)
@given(
    seed=st.integers(0, 2**32),
    count=st.integers(1, 20),
    data=st.data(),
)
def test_sticky_picks_only_available_partitions(seed: int, count: int, data: st.DataObject) -> None:
    available = sorted(data.draw(st.sets(st.integers(0, count - 1))))
    part = DefaultPartitioner(rng=random.Random(seed), batch_size=5)
    for _ in range(50):
        p = part.partition("t", None, count, available)
        assert 0 <= p < count
        if available:
            assert p in available
        part.record_appended("t", p, 3)


def test_sticky_is_uniform_over_available() -> None:
    part = DefaultPartitioner(rng=random.Random(11), batch_size=1)
    seen: Counter[int] = Counter()
    for _ in range(6000):
        p = part.partition("t", None, 8, [1, 3, 5])
        seen[p] += 1
        part.record_appended("t", p, 1)
    assert set(seen) == {1, 3, 5}
    assert min(seen.values()) > 1700


def test_adaptive_prefers_short_queues() -> None:
    part = DefaultPartitioner(rng=random.Random(5), batch_size=1)
    # Weights max+1-size: 10, 1, 1 -> partition 0 about 10 of every 12 picks.
    part.update_load_stats("t", {0: 0, 1: 9, 2: 9}, 3)
    seen: Counter[int] = Counter()
    for _ in range(1200):
        p = part.partition("t", None, 3, [0, 1, 2])
        seen[p] += 1
        part.record_appended("t", p, 1)
    assert seen[0] > 900
    assert seen[1] > 0 and seen[2] > 0


def test_adaptive_excluded_partition_is_never_picked() -> None:
    part = DefaultPartitioner(rng=random.Random(5), batch_size=1)
    part.update_load_stats("t", {0: 2, 2: 2}, 3)  # partition 1 excluded (no leader)
    for _ in range(200):
        p = part.partition("t", None, 3, [0, 1, 2])
        assert p in (0, 2)
        part.record_appended("t", p, 1)


def test_adaptive_off_or_equal_queues_fall_back_to_uniform() -> None:
    for part, sizes in (
        (DefaultPartitioner(rng=random.Random(5), adaptive=False), {0: 0, 1: 9}),
        (DefaultPartitioner(rng=random.Random(5)), {0: 4, 1: 4}),
        (DefaultPartitioner(rng=random.Random(5)), {0: 4}),
    ):
        part.update_load_stats("t", sizes, len(sizes) if len(sizes) > 1 else 1)
        assert part._topics["t"].cumulative == []


def test_default_partitioner_validates() -> None:
    with pytest.raises(ValueError, match="batch_size"):
        DefaultPartitioner(rng=random.Random(), batch_size=0)
    part = DefaultPartitioner(rng=random.Random())
    with pytest.raises(ValueError, match="wait for metadata"):
        part.partition("t", None, 0, [])
    with pytest.raises(ValueError, match="size"):
        part.record_appended("t", 0, -1)
    with pytest.raises(ValueError, match="negative queue"):
        part.update_load_stats("t", {0: -1, 1: 0}, 2)


def test_no_available_partition_still_answers() -> None:
    part = DefaultPartitioner(rng=random.Random(2))
    assert 0 <= part.partition("t", None, 5, []) < 5


def test_round_robin_cycles_available_partitions() -> None:
    rr = RoundRobinPartitioner()
    got = [rr.partition("t", b"same-key", 6, [0, 2, 4]) for _ in range(7)]
    assert got == [0, 2, 4, 0, 2, 4, 0]
    assert [rr.partition("u", None, 3, []) for _ in range(4)] == [0, 1, 2, 0]
    rr.record_appended("t", 0, 100)


def test_function_partitioner_calls_user_code_and_checks_result() -> None:
    calls: list[tuple[str, bytes | None, int, Sequence[int]]] = []

    def fn(topic: str, key: bytes | None, count: int, available: Sequence[int]) -> int:
        calls.append((topic, key, count, available))
        return count - 1

    fp = FunctionPartitioner(fn)
    assert fp.partition("t", b"k", 4, [1]) == 3
    assert calls == [("t", b"k", 4, [1])]
    fp.record_appended("t", 3, 10)
    with pytest.raises(ValueError, match=r"returned partition 9 .* \[0, 4\)"):
        FunctionPartitioner(lambda *_: 9).partition("t", None, 4, [])
    with pytest.raises(TypeError, match="must return an int"):
        FunctionPartitioner(lambda *_: "1").partition("t", None, 4, [])  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="callable"):
        FunctionPartitioner(3)  # type: ignore[arg-type]
