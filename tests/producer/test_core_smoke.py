from __future__ import annotations

from kafkacore.producer import BatchCompleted
from tests.client.fakebroker import Pump
from tests.producer.scripted import boot_producer


def delivered(pump: Pump) -> list[BatchCompleted]:
    return [e for e in pump.events if isinstance(e, BatchCompleted)]


def test_append_and_deliver() -> None:
    core, pump, log = boot_producer()
    for i in range(100):
        core.append("t", b"v%d" % i, b"k%d" % (i % 7), timestamp=1000 + i, token=i, now=pump.now)
    pump.run(until=lambda: sum(len(e.tokens) for e in delivered(pump)) == 100, rounds=500)
    tokens = sorted(int(t) for e in delivered(pump) for t in e.tokens)  # type: ignore[call-overload]
    assert tokens == list(range(100))
    assert all(e.error is None for e in delivered(pump))
    assert sum(len(v) for v in log.logs.values()) == 100
