"""What every consumer does, whatever its I/O idiom: the consumer's sans-IO surface.

Theory of operation
-------------------
The three consumers (blocking, asyncio, trio) offer the same calls. What a
call *does* is written here once, in :class:`ConsumerSurface`; an idiom
supplies three things only:

- ``_call(fn)``: run ``fn(core, now)`` as a core command on the loop and
  return its value. It is a plain call in every idiom (the blocking
  consumer hops to its loop thread and back; the async ones are on the
  loop already), so every call that does not wait (``subscribe``,
  ``seek``, ``pause``, ``assignment``...) is written here, for all three;
- ``_clock()``: the loop's clock;
- how to wait. A call that waits for the core (``poll``, ``position``,
  the iterator) is written as a generator of :class:`Wait` steps: "sleep
  until the core reports anything after ``mark``, or until ``deadline``".
  The blocking consumer runs it with :func:`drive` and a condition
  variable, the async ones with their event loop's event. A call that
  waits for one operation (``commit``, offset lookups, ``close``) is a core
  command returning an :class:`~kafkacore.operation.Operation`, built
  here; the idiom waits for it its own way.

``for record in consumer`` borrows a batch and hands it over one record at
a time (:class:`~kafkacore.transports._consumer_held.HeldRecords`): commits, also
automatic and on ``close``, cover the records handed over, the one being
processed when the loop breaks or raises included, and never the rest.
The batch lives on the consumer, not in the generator, so leaving the loop
needs no generator finalisation to be exact.
"""

from __future__ import annotations

import enum
import random
from collections.abc import Callable, Generator, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, TypeVar

from kafkacore.client import TopicPartition
from kafkacore.consumer import (
    ConsumerCore,
    ConsumerGroupMetadata,
    ConsumerRecord,
    OffsetAndMetadata,
    Operation,
)
from kafkacore.errors import KafkaTimeoutError

from ._common import Role, make_parts
from ._consumer_held import HeldRecords
from ._consumer_router import ConsumerRouter, RebalanceListener
from ._router import Completion
from ._sockets import Address

__all__ = [
    "REFILLED",
    "ConsumerState",
    "ConsumerSurface",
    "Steps",
    "Wait",
    "drive",
    "timeout_ms",
]

T = TypeVar("T")
Command = Callable[[ConsumerCore, float], T]


class ConsumerState(enum.Enum):
    NEW = "new"
    RUNNING = "running"
    CLOSED = "closed"


@dataclass(frozen=True, slots=True)
class Wait:
    """A waiting step: until the core reports anything after ``mark`` (the
    router's ``seq``), or until ``deadline`` on the loop's clock."""

    mark: int
    deadline: float


#: Yielded by the iterator after it borrowed a fresh batch: trio makes
#: every batch a checkpoint, so a cancel scope around the loop is honoured.
REFILLED = Wait(-1, float("-inf"))

Steps = Generator[Wait, None, T]


def drive(steps: Steps[T], block: Callable[[Wait], None]) -> T:
    """Run ``steps`` to its value, blocking on each wait (the blocking idiom)."""
    while True:
        try:
            wait = next(steps)
        except StopIteration as stop:
            return stop.value  # type: ignore[no-any-return]
        block(wait)


def timeout_ms(timeout: float | None) -> int | None:
    """A user's ``timeout`` (seconds, None: the default) for the core."""
    return None if timeout is None else max(int(timeout * 1000), 0)


class ConsumerSurface:
    """The calls every consumer offers; see the module docstring."""

    _NAME = "Consumer"  # the public class name, for messages
    _state: ConsumerState

    def __init__(
        self,
        *topics: str,
        bootstrap_servers: str | Sequence[str] | None = "localhost:9092",
        source_address: Address | None = None,
        ssl_server_hostname: str | None = None,
        rng: random.Random | None = None,
        listener: RebalanceListener | None = None,
        **options: Any,
    ) -> None:
        """Options as ``ClientConfig`` + ``ConsumerConfig`` (split by ``kafkacore.options``)."""
        self._parts = make_parts(
            self._NAME,
            bootstrap_servers,
            role=Role.CONSUMER,
            source_address=source_address,
            ssl_server_hostname=ssl_server_hostname,
            rng=rng,
            options=options,
        )
        self.config = self._parts.consumer
        self.client_config = self._parts.config
        self._topics = list(topics)
        self._listener = listener
        self._router = ConsumerRouter(wake=self._notify)
        self._held = HeldRecords(self._router)
        self._setup()

    def _setup(self) -> None:
        """Build the idiom's driver (and, when it starts at once, the core)."""
        raise NotImplementedError

    # -- what the idiom supplies ---------------------------------------------
    def _call(self, fn: Command[T]) -> T:
        raise NotImplementedError

    def _clock(self) -> float:
        raise NotImplementedError

    def _notify(self) -> None:
        """On the loop, after every core event: wake whoever waits."""
        raise NotImplementedError

    def _build_core(self, now: float) -> ConsumerCore:
        parts = self._parts
        return ConsumerCore(parts.config, self.config, now=now, rng=parts.rng)

    @property
    def state(self) -> ConsumerState:
        return self._state

    # -- subscription ---------------------------------------------------------
    def subscribe(
        self,
        topics: Iterable[str] | None = None,
        *,
        pattern: str | None = None,
        listener: RebalanceListener | None = None,
    ) -> None:
        """Join the group for ``topics`` (or every topic matching ``pattern``)."""
        if listener is not None:
            self._listener = listener
        names = None if topics is None else list(topics)
        wait = self._listener is not None

        def issue(core: ConsumerCore, now: float) -> None:
            self._held.give_back(core, now)
            core.await_revocation_ack = wait
            core.subscribe(names, pattern=pattern, now=now)

        self._call(issue)

    def unsubscribe(self) -> None:
        self._call(lambda core, now: self._given_back(core, now, core.unsubscribe))

    def assign(self, partitions: Iterable[TopicPartition]) -> None:
        tps = [TopicPartition(*tp) for tp in partitions]
        self._call(lambda core, now: self._given_back(core, now, core.assign, tps))

    def assignment(self) -> frozenset[TopicPartition]:
        return self._call(lambda core, now: core.assignment())

    def group_metadata(self) -> ConsumerGroupMetadata:
        """This member's group identity, for ``send_offsets_to_transaction`` (KIP-447)."""
        return self._call(lambda core, now: core.group_metadata())

    # -- positions ----------------------------------------------------------------
    def seek(self, partition: TopicPartition, offset: int) -> None:
        tp = TopicPartition(*partition)
        self._call(lambda core, now: self._given_back(core, now, core.seek, tp, offset))

    def seek_to_beginning(self, *partitions: TopicPartition) -> None:
        self._call(
            lambda core, now: self._given_back(core, now, core.seek_to_beginning, partitions)
        )

    def seek_to_end(self, *partitions: TopicPartition) -> None:
        self._call(lambda core, now: self._given_back(core, now, core.seek_to_end, partitions))

    def pause(self, *partitions: TopicPartition) -> None:
        self._call(lambda core, now: self._given_back(core, now, core.pause, partitions))

    def resume(self, *partitions: TopicPartition) -> None:
        self._call(lambda core, now: self._given_back(core, now, core.resume, partitions))

    def paused(self) -> frozenset[TopicPartition]:
        return self._call(lambda core, now: core.paused())

    def lag(self, partition: TopicPartition) -> int | None:
        tp = TopicPartition(*partition)

        def lag(core: ConsumerCore, now: float) -> int | None:
            self._held.sync(core, now)
            return core.lag(tp)

        return self._call(lag)

    def missing_topics(self) -> frozenset[str]:
        """Followed topics that metadata says do not exist (logged as a warning too)."""
        return self._call(lambda core, now: core.missing_topics())

    def run_on_loop(self, fn: Callable[[ConsumerCore], T]) -> T:
        """Run ``fn(core)`` on the loop (for queries in tests and tools)."""
        return self._call(lambda core, now: fn(core))

    # -- waiting loops, as steps ----------------------------------------------
    def _poll_steps(self, fn: Command[list[T]], timeout: float) -> Steps[list[T]]:
        """Ask the core with ``fn`` until it hands something over or ``timeout`` passes;
        the rebalance listener runs here, in the user's thread or task."""
        deadline = self._clock() + max(timeout, 0.0)
        while True:
            mark = self._router.seq
            out = self._call(fn)
            self._router.dispatch(self._listener, self._ack)
            if out or self._clock() >= deadline:
                return out
            yield Wait(mark, deadline)

    def _position_steps(self, partition: TopicPartition, timeout: float | None) -> Steps[int]:
        """The next offset to hand out, waiting until it is known (reset, committed)."""
        tp = TopicPartition(*partition)
        limit = self.config.default_api_timeout_ms / 1000 if timeout is None else timeout
        deadline = self._clock() + limit

        def probe(core: ConsumerCore, now: float) -> tuple[int | None, BaseException | None, bool]:
            self._held.sync(core, now)
            hopeless = core.hopeless_cause()
            return core.position(tp), hopeless or core.stall_cause(), hopeless is not None

        while True:
            mark = self._router.seq
            pos, cause, hopeless = self._call(probe)
            if pos is not None:
                return pos
            if hopeless:
                assert cause is not None
                raise cause  # no retry will help
            if self._clock() >= deadline:
                why = "" if cause is None else f"; last error: {type(cause).__name__}: {cause}"
                error = KafkaTimeoutError(
                    f"{self._NAME}.position: {tp} unknown after {limit} s{why}"
                )
                error.__cause__ = cause
                raise error
            yield Wait(mark, deadline)

    def _records(
        self, block: Callable[[Wait], None] | None = None
    ) -> Generator[ConsumerRecord | Wait, None, None]:
        """Records one by one until ``close()``; with ``block``, never a Wait.

        A record counts as consumed once handed over: leaving the loop
        (``break``, an exception) commits it with those before it, and not
        the ones after it, which the next iteration (or the next member of
        the group) gets again.
        """
        held = self._held
        router = self._router

        def run_listener() -> None:
            router.dispatch(self._listener, self._ack)

        def fill(core: ConsumerCore, now: float) -> list[ConsumerRecord]:
            return held.fill(core, now)

        while self._state is ConsumerState.RUNNING:
            if router.changed:
                held.look(run_listener)
            records = held.records
            for record in records:
                if router.changed:  # look again before handing more over
                    if held.records is records:  # (not replaced by seek, poll, ...)
                        held.unpull()
                    break
                yield record  # handed over, hence consumed, from here on
            else:
                steps = self._poll_steps(fill, 1.0)
                if block is not None:
                    drive(steps, block)
                else:
                    yield from steps
                    yield REFILLED

    # -- operations (complete later) ----------------------------------------------
    def _start(self, command: Command[Operation[Any]], done: Completion) -> None:
        """Issue ``command``; ``done`` gets its operation's outcome."""
        self._call(lambda core, now: self._router.expect(command(core, now), done))

    def _commit_command(
        self, offsets: Mapping[TopicPartition, OffsetAndMetadata | int] | None, ms: int | None
    ) -> Command[Operation[Any]]:
        # Commits cover every record the iterator handed over.
        return lambda core, now: self._synced(core, now, core.commit, offsets, timeout_ms=ms)

    def _close_command(self, autocommit: bool) -> Command[Operation[Any]]:
        return lambda core, now: self._synced(core, now, core.close, autocommit=autocommit)

    @staticmethod
    def _lookup_command(
        name: str, partitions: Iterable[TopicPartition], ms: int | None
    ) -> Command[Operation[Any]]:
        """``committed``, ``end_offsets`` or ``beginning_offsets`` of ``partitions``."""
        tps = [TopicPartition(*tp) for tp in partitions]
        return lambda core, now: getattr(core, name)(tps, now=now, timeout_ms=ms)

    @staticmethod
    def _times_command(
        timestamps: Mapping[TopicPartition, int], ms: int | None
    ) -> Command[Operation[Any]]:
        query = {TopicPartition(*tp): ts for tp, ts in timestamps.items()}
        return lambda core, now: core.offsets_for_times(query, now=now, timeout_ms=ms)

    # -- plumbing -------------------------------------------------------------------
    def _synced(
        self, core: ConsumerCore, now: float, fn: Callable[..., T], *args: Any, **kw: Any
    ) -> T:
        """Tell the core what the iterator handed over, then ``fn``."""
        self._held.sync(core, now)
        return fn(*args, now=now, **kw)

    def _given_back(self, core: ConsumerCore, now: float, fn: Callable[..., T], *args: Any) -> T:
        """Give the iterator's unhanded records back to the core, then ``fn``."""
        self._held.give_back(core, now)
        return fn(*args, now=now)

    def _news_since(self, wait: Wait) -> Callable[[], bool]:
        """True once the core reported anything after ``wait`` was taken."""
        router, mark = self._router, wait.mark
        return lambda: router.seq != mark

    def _give_back_held(self) -> None:
        if self._held:
            self._call(lambda core, now: self._held.give_back(core, now))

    def _ack(self, token: int) -> None:
        self._call(lambda core, now: core.revocation_done(token, now=now))
