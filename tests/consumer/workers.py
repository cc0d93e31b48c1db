"""Consumer group members on each transport, each on its own thread, for broker tests.

A worker polls in a loop, records (partition, offset) of every record it
gets, commits synchronously after each poll (so what can be redelivered to
the next owner is at most the last uncommitted poll), and publishes its
current assignment. ``kind`` is selector, asyncio, trio, confluent
(librdkafka) or java (the Java client, tests/consumer/java/GroupMember.java,
run in its own JVM). Every rebalance the member goes through is stamped in
``rebalances`` (monotonic time): a new generation for kafkacore members, an
assignment callback for the others (Java and librdkafka call it once per
rebalance, with the empty set when nothing was added).
"""

from __future__ import annotations

import asyncio
import contextlib
import subprocess
import threading
import time
from collections.abc import Callable
from typing import Any

import trio

from kafkacore.client import TopicPartition
from kafkacore.consumer import CommitFailedError
from kafkacore.transports._consumer_asyncio import AsyncKafkaConsumer
from kafkacore.transports._consumer_selector import KafkaConsumer
from kafkacore.transports._consumer_trio import TrioKafkaConsumer

MAX_POLL = 50


def collect(consumer: Any, into: list[Any], want: int) -> bool:
    """Poll once into ``into``; True when it holds ``want`` records."""
    into.extend(consumer.poll_records(timeout=0.2))
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
        self,
        kind: str,
        bootstrap: str,
        group: str,
        topic: str,
        protocol: str,
        *,
        assignor: str = "range",
        java: tuple[str, str] | None = None,
        **extra: Any,
    ) -> None:
        self.kind = kind
        self.assignor = assignor
        self.java = java  # (java binary, classpath) for kind "java"
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
        self.rebalances: list[float] = []
        self.generation = -1
        self.commit_failures = 0
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

    def _generation(self, c: Any) -> None:
        """Stamp a rebalance when the kafkacore member's generation moved."""
        member = c.run_on_loop(lambda core: core.member)
        generation = -1 if member is None else member.generation
        if generation != self.generation and generation >= 0:
            self.rebalances.append(time.monotonic())
        self.generation = generation

    def _run(self) -> None:
        try:
            if self.kind == "selector":
                self._selector()
            elif self.kind == "asyncio":
                asyncio.run(self._asyncio())
            elif self.kind == "trio":
                trio.run(self._trio)
            elif self.kind == "java":
                self._java()
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
                recs = c.poll_records(timeout=0.2)
                self._note(recs, c.assignment())
                self._generation(c)
                if recs:
                    # A rebalance meanwhile fences the commit: these may be redelivered.
                    try:
                        c.commit()
                    except CommitFailedError:
                        self.commit_failures += 1

    async def _asyncio(self) -> None:
        async with AsyncKafkaConsumer(self.topic, **self.opts) as c:
            while not self.stop.is_set():
                recs = await c.poll_records(timeout=0.2)
                self._note(recs, c.assignment())
                self._generation(c)
                if recs:
                    try:
                        await c.commit()
                    except CommitFailedError:
                        self.commit_failures += 1

    async def _trio(self) -> None:
        async with TrioKafkaConsumer(self.topic, **self.opts) as c:
            while not self.stop.is_set():
                recs = await c.poll_records(timeout=0.2)
                self._note(recs, c.assignment())
                self._generation(c)
                if recs:
                    try:
                        await c.commit()
                    except CommitFailedError:
                        self.commit_failures += 1

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
            conf["partition.assignment.strategy"] = self.assignor
            conf["session.timeout.ms"] = 10000
            conf["heartbeat.interval.ms"] = 500
        c = confluent_kafka.Consumer(conf)
        owned: set[int] = set()

        def on_assign(consumer: Any, parts: list[Any]) -> None:
            self.rebalances.append(time.monotonic())
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
                    try:
                        c.commit(asynchronous=False)
                    except confluent_kafka.KafkaException:
                        self.commit_failures += 1
        finally:
            c.close()

    def _java(self) -> None:
        assert self.java is not None, "kind 'java' needs java=(binary, classpath)"
        binary, classpath = self.java
        args = [self.bootstrap, self.group, self.topic, self.protocol, self.assignor]
        proc = subprocess.Popen(
            [binary, "-Xmx256m", "-cp", classpath, "GroupMember", *args],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            text=True,
        )
        assert proc.stdin is not None and proc.stdout is not None
        stopper = threading.Thread(target=self._stop_java, args=(proc,), daemon=True)
        stopper.start()
        owned: set[int] = set()
        try:
            for line in proc.stdout:
                kind, _, rest = line.strip().partition(" ")
                if kind == "R":
                    partition, offset = rest.split()
                    self.records.append((int(partition), int(offset)))
                elif kind == "ASSIGNED":
                    generation, parts = rest.split()
                    self.rebalances.append(time.monotonic())
                    self.generation = int(generation)
                    owned.update(int(p) for p in parts.split(",") if p != "-")
                elif kind in ("REVOKED", "LOST"):
                    owned.difference_update(int(p) for p in rest.split(",") if p != "-")
                elif kind == "COMMIT_FAILED":
                    self.commit_failures += 1
                self.assignment = frozenset(owned)
        finally:
            proc.wait(60)
        assert proc.returncode == 0, f"the Java member exited with {proc.returncode}"

    def _stop_java(self, proc: subprocess.Popen[str]) -> None:
        self.stop.wait()
        assert proc.stdin is not None
        with contextlib.suppress(OSError):
            proc.stdin.write("stop\n")
            proc.stdin.flush()
