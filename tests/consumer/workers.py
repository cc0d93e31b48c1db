"""Consumer group members on each transport, each on its own thread, for broker tests.

A worker polls in a loop, records (partition, offset) of every record it
gets, commits synchronously after each poll (so what can be redelivered to
the next owner is at most the last uncommitted poll), and publishes its
current assignment. ``kind`` is selector, asyncio, trio or confluent.
"""

from __future__ import annotations

import asyncio
import contextlib
import threading
import time
from collections.abc import Callable
from typing import Any

import trio

from kafkacore.client import TopicPartition
from kafkacore.consumer import CommitFailedError
from transports._consumer_asyncio import AsyncKafkaConsumer
from transports._consumer_selector import KafkaConsumer
from transports._consumer_trio import TrioKafkaConsumer

MAX_POLL = 50


def collect(consumer: Any, into: list[Any], want: int) -> bool:
    """Poll once into ``into``; True when it holds ``want`` records."""
    into.extend(consumer.poll(0.2))
    return len(into) >= want


def wait_for(
    cond: Callable[[], bool],
    what: str,
    timeout: float = 90.0,
    state: Callable[[], str] | None = None,
) -> None:
    """Wait for the cluster to reach a state (a bound on failure, not a timing assertion)."""
    end = time.monotonic() + timeout
    while not cond():
        if time.monotonic() > end:
            extra = f"; {state()}" if state is not None else ""
            raise AssertionError(f"never happened: {what}{extra}")
        time.sleep(0.1)


def describe(workers: list[Worker]) -> str:
    return "; ".join(
        f"{w.kind}: owns {sorted(w.assignment)}, {len(w.records)} records"
        + (" (closed)" if w.closed.is_set() else "")
        + (f" error {w.error!r}" if w.error is not None else "")
        for w in workers
    )


class Worker:
    def __init__(
        self, kind: str, bootstrap: str, group: str, topic: str, protocol: str, **extra: Any
    ) -> None:
        self.kind = kind
        self.opts: dict[str, Any] = dict(
            bootstrap_servers=bootstrap,
            group_id=group,
            group_protocol=protocol,
            auto_offset_reset="earliest",
            enable_auto_commit=False,
            max_poll_records=MAX_POLL,
            heartbeat_interval_ms=500,
            session_timeout_ms=10000,
            **extra,
        )
        self.topic = topic
        self.protocol = protocol
        self.bootstrap = bootstrap
        self.group = group
        self.stop = threading.Event()
        self.records: list[tuple[int, int]] = []
        self.assignment: frozenset[int] = frozenset()
        self.error: BaseException | None = None
        self.closed = threading.Event()
        self.thread = threading.Thread(target=self._run, name=f"worker-{kind}", daemon=True)

    def start(self) -> Worker:
        self.thread.start()
        return self

    def close(self) -> None:
        self.stop.set()
        self.thread.join(60)
        assert not self.thread.is_alive(), f"{self.kind} worker did not close"
        if self.error is not None:
            raise self.error

    def _note(self, records: list[Any], assignment: frozenset[TopicPartition]) -> None:
        self.records.extend((r.partition, r.offset) for r in records)
        self.assignment = frozenset(tp.partition for tp in assignment)

    def _run(self) -> None:
        try:
            if self.kind == "selector":
                self._selector()
            elif self.kind == "asyncio":
                asyncio.run(self._asyncio())
            elif self.kind == "trio":
                trio.run(self._trio)
            else:
                self._confluent()
        except BaseException as exc:
            self.error = exc
        finally:
            self.assignment = frozenset()
            self.closed.set()

    def _selector(self) -> None:
        with KafkaConsumer(self.topic, **self.opts) as c:
            while not self.stop.is_set():
                recs = c.poll(0.2)
                self._note(recs, c.assignment())
                if recs:
                    # A rebalance meanwhile fences the commit: these may be redelivered.
                    with contextlib.suppress(CommitFailedError):
                        c.commit()

    async def _asyncio(self) -> None:
        async with AsyncKafkaConsumer(self.topic, **self.opts) as c:
            while not self.stop.is_set():
                recs = await c.poll(0.2)
                self._note(recs, c.assignment())
                if recs:
                    with contextlib.suppress(CommitFailedError):
                        await c.commit()

    async def _trio(self) -> None:
        async with TrioKafkaConsumer(self.topic, **self.opts) as c:
            while not self.stop.is_set():
                recs = await c.poll(0.2)
                self._note(recs, c.assignment())
                if recs:
                    with contextlib.suppress(CommitFailedError):
                        await c.commit()

    def _confluent(self) -> None:
        import confluent_kafka

        conf: dict[str, Any] = {
            "bootstrap.servers": self.bootstrap,
            "group.id": self.group,
            "auto.offset.reset": "earliest",
            "enable.auto.commit": False,
            "group.protocol": self.protocol,
        }
        if self.protocol == "classic":
            conf["partition.assignment.strategy"] = "range"
            conf["session.timeout.ms"] = 10000
            conf["heartbeat.interval.ms"] = 500
        c = confluent_kafka.Consumer(conf)
        owned: set[int] = set()

        def on_assign(consumer: Any, parts: list[Any]) -> None:
            owned.update(p.partition for p in parts)

        def on_revoke(consumer: Any, parts: list[Any]) -> None:
            owned.difference_update(p.partition for p in parts)

        c.subscribe([self.topic], on_assign=on_assign, on_revoke=on_revoke, on_lost=on_revoke)
        try:
            while not self.stop.is_set():
                msgs = c.consume(MAX_POLL, 0.2)
                good = [mm for mm in msgs if mm.error() is None]
                self.records.extend(
                    (int(mm.partition() or 0), int(mm.offset() or 0)) for mm in good
                )
                self.assignment = frozenset(owned)
                if good:
                    with contextlib.suppress(confluent_kafka.KafkaException):
                        c.commit(asynchronous=False)
        finally:
            c.close()
