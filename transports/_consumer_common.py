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

kafka-python's and aiokafka's calls are accepted too (their constructor
keywords, ``poll(timeout_ms=)`` by partition, ``committed(tp)``, ``topics()``,
``highwater``...); how their arguments are checked and their durations
made milliseconds is :mod:`kafkacore.transports._consumer_args`.
"""

from __future__ import annotations

import enum
import random
from collections.abc import Callable, Generator, Iterable, Mapping, Sequence
from typing import Any, TypeVar

from kafkacore.client import TopicPartition
from kafkacore.consumer import (
    ConsumerCore,
    ConsumerGroupMetadata,
    ConsumerRecord,
    OffsetAndMetadata,
    Operation,
)
from kafkacore.errors import InvalidArgumentError

from ._common import Role, make_parts
from ._consumer_args import (
    ConsumerExtras,
    check_topics,
    one_partition,
    partition_list,
    partitions_one_by_one,
)
from ._consumer_held import HeldRecords
from ._consumer_queries import ConsumerQueries
from ._consumer_router import ConsumerRouter, RebalanceListener
from ._consumer_steps import LISTEN, REFILLED, Command, Steps, Wait, drive, timeout_ms
from ._router import Completion
from ._sockets import Address
from ._unclosed import WarnsUnclosed, weak_method

__all__ = [
    "REFILLED",
    "Command",
    "ConsumerState",
    "ConsumerSurface",
    "Steps",
    "Wait",
    "drive",
    "timeout_ms",
]


T = TypeVar("T")


class ConsumerState(enum.Enum):
    NEW = "new"
    RUNNING = "running"
    CLOSED = "closed"


class ConsumerSurface(ConsumerQueries, WarnsUnclosed):
    """The calls every consumer offers; see the module docstring."""

    _NAME = "Consumer"  # the public class name, for messages
    #: The blocking consumer calls the rebalance listener in the caller's
    #: thread, in poll (Java, kafka-python); the async ones yield LISTEN.
    _LISTENER_INLINE = True
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
        """Options as ``ClientConfig`` + ``ConsumerConfig`` (split by ``kafkacore.options``),
        plus kafka-python's ``key_deserializer``, ``value_deserializer``,
        ``consumer_timeout_ms`` and ``default_offset_commit_callback``."""
        topics_given = check_topics(self._NAME, topics)
        self._extras = ConsumerExtras.take(self._NAME, options)
        self._parts = make_parts(
            self._NAME,
            bootstrap_servers,
            role=Role.CONSUMER,
            source_address=source_address,
            ssl_server_hostname=ssl_server_hostname,
            rng=rng,
            options=options,
            own=ConsumerExtras.NAMES,
        )
        self.config = self._parts.consumer
        self.client_config = self._parts.config
        self._topics = topics_given
        self._listener = listener
        self._router = ConsumerRouter(wake=weak_method(self._notify))
        self._held = HeldRecords(self._router)
        self._setup()

    def _setup(self) -> None:
        """Build the idiom's driver (and, when it starts at once, the core)."""
        raise NotImplementedError

    def _is_open(self) -> bool:
        return self._state is ConsumerState.RUNNING

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
            for need in ("on_partitions_revoked", "on_partitions_assigned"):
                if not callable(getattr(listener, need, None)):
                    raise TypeError(f"subscribe: the listener {listener!r} has no {need}()")
            self._listener = listener
        if isinstance(topics, str):
            raise TypeError(f"subscribe: expected a list of topic names, got {topics!r}")
        names = None if topics is None else check_topics("subscribe", list(topics))
        wait = self._listener is not None

        # aiokafka: subscribe() with a listener rejoins, so the listener hears of
        # the partitions (also when the topics are the same as before).
        rejoin = listener is not None and not self._LISTENER_INLINE

        def issue(core: ConsumerCore, now: float) -> None:
            self._held.give_back(core, now)
            core.await_revocation_ack = wait
            core.subscribe(names, pattern=pattern, now=now)
            member = core.member
            if rejoin and member is not None and member.stable:
                member.request_rejoin(now=now, reason="subscribe() with a rebalance listener")

        self._call(issue)

    def unsubscribe(self) -> None:
        self._call(lambda core, now: self._given_back(core, now, core.unsubscribe))

    def assign(self, partitions: Iterable[TopicPartition]) -> None:
        tps = partition_list(partitions, "assign")
        self._call(lambda core, now: self._given_back(core, now, core.assign, tps))

    def assignment(self) -> frozenset[TopicPartition]:
        return self._call(lambda core, now: core.assignment())

    def subscription(self) -> frozenset[str]:
        return self._call(lambda core, now: core.subscription())

    def group_metadata(self) -> ConsumerGroupMetadata:
        """This member's group identity, for ``send_offsets_to_transaction`` (KIP-447)."""
        return self._call(lambda core, now: core.group_metadata())

    # -- positions ----------------------------------------------------------------
    def seek(self, partition: TopicPartition, offset: int) -> None:
        tp = one_partition(partition, "seek")
        if isinstance(offset, bool) or not isinstance(offset, int):
            raise InvalidArgumentError(f"seek: offset must be an int >= 0, got {offset!r}")
        self._call(lambda core, now: self._given_back(core, now, core.seek, tp, offset))

    def _seek_to_beginning(self, partitions: tuple[TopicPartition, ...]) -> None:
        tps = partitions_one_by_one(partitions, "seek_to_beginning")
        self._call(lambda core, now: self._given_back(core, now, core.seek_to_beginning, tps))

    def _seek_to_end(self, partitions: tuple[TopicPartition, ...]) -> None:
        tps = partitions_one_by_one(partitions, "seek_to_end")
        self._call(lambda core, now: self._given_back(core, now, core.seek_to_end, tps))

    def pause(self, *partitions: TopicPartition) -> None:
        tps = partitions_one_by_one(partitions, "pause")
        self._call(lambda core, now: self._given_back(core, now, core.pause, tps))

    def resume(self, *partitions: TopicPartition) -> None:
        tps = partitions_one_by_one(partitions, "resume")
        self._call(lambda core, now: self._given_back(core, now, core.resume, tps))

    # -- waiting loops, as steps ----------------------------------------------
    def _poll_steps(
        self, fn: Command[list[T]], timeout: float, *, bounded: bool = True
    ) -> Steps[list[T]]:
        """Ask the core with ``fn`` until it hands something over or ``timeout`` passes;
        the rebalance listener runs here, in the user's thread or task. A
        ``bounded`` poll that waited and ends empty tells the core, which raises
        NoBrokersAvailable if no broker was ever reached (issue 26)."""
        deadline = self._clock() + max(timeout, 0.0)
        what = f"{self._NAME}.poll"
        while True:
            mark = self._router.seq
            out = self._call(fn)
            if self._LISTENER_INLINE:
                self._router.dispatch(self._listener, self._ack)
            elif self._router.notices:
                yield LISTEN
            if out or self._clock() >= deadline:
                if not out and bounded and timeout > 0:
                    self._call(lambda core, now: core.poll_timed_out(what, timeout, now=now))
                return out
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
            if self._LISTENER_INLINE:
                router.dispatch(self._listener, self._ack)

        def fill(core: ConsumerCore, now: float) -> list[ConsumerRecord]:
            return held.fill(core, now)

        extras = self._extras
        deserialize = extras.deserialize if extras.deserializes else None
        # consumer_timeout_ms (kafka-python): stop after this long without a record.
        quiet = extras.consumer_timeout_s
        last = self._clock()
        while self._state is ConsumerState.RUNNING:
            if router.changed:
                if router.notices and not self._LISTENER_INLINE:
                    yield LISTEN
                held.look(run_listener)
            records = held.records
            handed = False
            for record in records:
                if router.changed:  # look again before handing more over
                    if held.records is records:  # (not replaced by seek, poll, ...)
                        held.unpull()
                    break
                handed = True
                # Handed over, hence consumed, from here on (a deserializer's
                # error included: it is raised in the record's place).
                yield record if deserialize is None else deserialize(record)
            else:
                step = 1.0
                if quiet is not None:
                    now = self._clock()
                    if handed:
                        last = now
                    step = min(step, last + quiet - now)
                    if step <= 0:
                        return
                steps = self._poll_steps(fill, step, bounded=False)  # waits for records
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
        """True once the core reported anything after ``wait`` was taken (or,
        for a wait with ``until``, once that is true)."""
        if wait.until is not None:
            return wait.until
        router, mark = self._router, wait.mark
        return lambda: router.seq != mark

    def _give_back_held(self) -> None:
        if self._held:
            self._call(lambda core, now: self._held.give_back(core, now))

    def _ack(self, token: int) -> None:
        self._call(lambda core, now: core.revocation_done(token, now=now))
