"""Run one client scenario on the selector, asyncio or trio transport, timed.

Each helper opens the transport's producer, client or consumer, runs one
scenario and returns :class:`Outcome` values: the result or the exception,
and how long it took (monotonic seconds, measured where the transport hands
the result over). Every run is bounded by ``bound_s``; overrunning it is a
test failure (the transport is then closed, so no thread or task is left).
The async runners also check that no asyncio task outlives the client.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import anyio
import trio

from kafkacore.client import TopicPartition

FLAVORS = ("selector", "asyncio", "trio")


@dataclass(frozen=True)
class Outcome:
    value: Any
    elapsed: float

    @property
    def error(self) -> BaseException | None:
        return self.value if isinstance(self.value, BaseException) else None


@dataclass(frozen=True)
class Run:
    outcomes: list[Outcome]
    total_s: float  # from opening the producer to the end of close()
    close_s: float
    settled_at: float  # monotonic time when every outcome was in (before ``idle_s``)


def chain(exc: BaseException | None) -> list[BaseException]:
    """``exc`` and its causes (``__cause__``, else ``__context__``), outermost first."""
    out: list[BaseException] = []
    while exc is not None and exc not in out:
        out.append(exc)
        exc = exc.__cause__ or exc.__context__
    return out


def chain_text(exc: BaseException | None) -> str:
    return " <- ".join(f"{type(e).__name__}: {e}" for e in chain(exc))


def _check_no_tasks() -> None:
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return
    left = [t for t in asyncio.all_tasks() if t is not asyncio.current_task() and not t.done()]
    assert not left, f"asyncio tasks left behind: {left}"


def _run_async(flavor: str, main: Any, bound_s: float) -> Any:
    async def bounded() -> Any:
        with anyio.fail_after(bound_s):
            result = await main()
        if flavor == "asyncio":
            await asyncio.sleep(0)  # let cancelled tasks finish before looking
            _check_no_tasks()
        return result

    if flavor == "asyncio":
        return asyncio.run(bounded())
    return trio.run(bounded)


def _producer_class(flavor: str) -> Any:
    if flavor == "asyncio":
        from kafkacore.transports._producer_asyncio import AsyncKafkaProducer

        return AsyncKafkaProducer
    from kafkacore.transports._producer_trio import TrioKafkaProducer

    return TrioKafkaProducer


# -- producer -----------------------------------------------------------------


def produce(
    flavor: str,
    bootstrap: str,
    topic: str,
    values: Sequence[bytes],
    *,
    bound_s: float,
    close_timeout: float = 5.0,
    idle_s: float = 0.0,
    **options: Any,
) -> Run:
    """Send ``values`` (one record each), wait for every outcome, stay open and
    idle ``idle_s`` seconds, then close."""
    if flavor == "selector":
        return _produce_selector(bootstrap, topic, values, bound_s, close_timeout, idle_s, options)

    async def main() -> Run:
        start = time.monotonic()
        producer = _producer_class(flavor)(bootstrap, **options)
        outcomes: list[Outcome | None] = [None] * len(values)
        async with producer:
            pending: list[tuple[int, float, Any]] = []
            for i, v in enumerate(values):
                t0 = time.monotonic()
                try:
                    pending.append((i, t0, await producer.send(topic, v)))
                except Exception as exc:
                    outcomes[i] = Outcome(exc, time.monotonic() - t0)

            async def settle(i: int, t0: float, slot: Any) -> None:
                try:
                    value = await slot
                except Exception as exc:
                    value = exc
                outcomes[i] = Outcome(value, time.monotonic() - t0)

            async with anyio.create_task_group() as tg:
                for i, t0, slot in pending:
                    tg.start_soon(settle, i, t0, slot)
            settled_at = time.monotonic()
            await anyio.sleep(idle_s)
            closing = time.monotonic()
            await producer.close(close_timeout)
            close_s = time.monotonic() - closing
        done = [o for o in outcomes if o is not None]
        assert len(done) == len(values)
        return Run(done, time.monotonic() - start, close_s, settled_at)

    result: Run = _run_async(flavor, main, bound_s + idle_s)
    return result


def _produce_selector(
    bootstrap: str,
    topic: str,
    values: Sequence[bytes],
    bound_s: float,
    close_timeout: float,
    idle_s: float,
    options: dict[str, Any],
) -> Run:
    from kafkacore.transports._producer_selector import KafkaProducer

    start = time.monotonic()
    producer = KafkaProducer(bootstrap, **options)
    outcomes: list[Outcome | None] = [None] * len(values)
    try:
        futures: list[Any] = []
        for i, v in enumerate(values):
            t0 = time.monotonic()
            try:
                fut = producer.send(topic, v)
            except Exception as exc:
                outcomes[i] = Outcome(exc, time.monotonic() - t0)
                continue

            def on_done(f: Any, i: int = i, t0: float = t0) -> None:
                exc = f.exception()
                outcomes[i] = Outcome(exc if exc is not None else f.result(), time.monotonic() - t0)

            fut.add_done_callback(on_done)
            futures.append(fut)
        deadline = start + bound_s
        for fut in futures:  # the producer's light futures: wait on each, within the bound
            with contextlib.suppress(Exception):  # a timeout here; the check below says so
                fut.exception(timeout=max(deadline - time.monotonic(), 0.0))
        not_done = [f for f in futures if not f.done()]
        assert not not_done, f"selector: {len(not_done)} sends unresolved after {bound_s} s"
        settled_at = time.monotonic()
        time.sleep(idle_s)
    finally:
        closing = time.monotonic()
        producer.close(close_timeout)
        close_s = time.monotonic() - closing
    done = [o for o in outcomes if o is not None]
    assert len(done) == len(values)
    return Run(done, time.monotonic() - start, close_s, settled_at)


# -- client -------------------------------------------------------------------


def client_call(
    flavor: str, bootstrap: str, method: str, arg: Any, *, bound_s: float, **options: Any
) -> Outcome:
    """Open a client (bootstrap included), call ``client.<method>(arg)``, close.

    A failed bootstrap is the outcome too: the clock starts before opening.
    """
    return client_calls(flavor, bootstrap, [(method, arg)], bound_s=bound_s, **options)[0]


def client_calls(
    flavor: str,
    bootstrap: str,
    calls: Sequence[tuple[str, Any]],
    *,
    bound_s: float,
    **options: Any,
) -> list[Outcome]:
    """One client, ``client.<method>(arg)`` for each call in turn; one outcome each.

    The first call's time includes the bootstrap; a failed bootstrap is the
    only outcome.
    """
    if flavor == "selector":
        from kafkacore.transports.selector import KafkaClient

        out: list[Outcome] = []
        t0 = time.monotonic()
        client = KafkaClient(bootstrap, **options)
        try:
            client.connect(timeout=bound_s)
        except Exception as exc:
            client.close()
            return [Outcome(exc, time.monotonic() - t0)]
        try:
            for method, arg in calls:
                try:
                    value = getattr(client, method)(arg, timeout=bound_s)
                except Exception as exc:
                    value = exc
                out.append(Outcome(value, time.monotonic() - t0))
                t0 = time.monotonic()
        finally:
            client.close()
        return out

    async def main() -> list[Outcome]:
        if flavor == "asyncio":
            from kafkacore.transports.asyncio import AsyncKafkaClient as cls
        else:
            from kafkacore.transports.trio import TrioKafkaClient as cls  # type: ignore[assignment]
        out: list[Outcome] = []
        t0 = time.monotonic()
        try:
            async with cls(bootstrap, **options) as client:
                for method, arg in calls:
                    try:
                        with anyio.fail_after(bound_s):
                            value = await getattr(client, method)(arg)
                    except Exception as exc:  # TimeoutError too: the call overran bound_s
                        value = exc
                    out.append(Outcome(value, time.monotonic() - t0))
                    t0 = time.monotonic()
        except Exception as exc:
            return [Outcome(exc, time.monotonic() - t0)]
        return out

    result: list[Outcome] = _run_async(flavor, main, bound_s * len(calls) + 10)
    return result


# -- consumer -----------------------------------------------------------------


def _consumer_class(flavor: str) -> Any:
    if flavor == "selector":
        from kafkacore.transports._consumer_selector import KafkaConsumer

        return KafkaConsumer
    if flavor == "asyncio":
        from kafkacore.transports._consumer_asyncio import AsyncKafkaConsumer

        return AsyncKafkaConsumer
    from kafkacore.transports._consumer_trio import TrioKafkaConsumer

    return TrioKafkaConsumer


def consumer_end_offsets(
    flavor: str, bootstrap: str, tps: Sequence[TopicPartition], *, bound_s: float, **options: Any
) -> Outcome:
    cls = _consumer_class(flavor)
    if flavor == "selector":
        t0 = time.monotonic()
        consumer = cls(bootstrap_servers=bootstrap, **options)
        try:
            value = consumer.end_offsets(tps, timeout=bound_s)
        except Exception as exc:
            value = exc
        finally:
            elapsed = time.monotonic() - t0
            consumer.close(timeout=5.0)
        return Outcome(value, elapsed)

    async def main() -> Outcome:
        t0 = time.monotonic()
        try:
            async with cls(bootstrap_servers=bootstrap, **options) as consumer:
                value = await consumer.end_offsets(tps)
        except Exception as exc:
            value = exc
        return Outcome(value, time.monotonic() - t0)

    result: Outcome = _run_async(flavor, main, bound_s + 10)
    return result


def consumer_poll_until_error(
    flavor: str, bootstrap: str, topic: str, *, window_s: float, **options: Any
) -> Outcome:
    """Subscribe and poll (1 s at a time) for ``window_s``; the first error, or
    the records seen when none came."""
    cls = _consumer_class(flavor)
    seen: list[Any] = []
    if flavor == "selector":
        t0 = time.monotonic()
        consumer = cls(topic, bootstrap_servers=bootstrap, **options)
        try:
            while time.monotonic() - t0 < window_s:
                seen.extend(consumer.poll_records(timeout=1.0))
            value: Any = seen
        except Exception as exc:
            value = exc
        finally:
            elapsed = time.monotonic() - t0
            consumer.close(timeout=5.0)
        return Outcome(value, elapsed)

    async def main() -> Outcome:
        t0 = time.monotonic()
        try:
            async with cls(topic, bootstrap_servers=bootstrap, **options) as consumer:
                while time.monotonic() - t0 < window_s:
                    seen.extend(await consumer.poll_records(timeout=1.0))
                return Outcome(seen, time.monotonic() - t0)
        except Exception as exc:
            return Outcome(exc, time.monotonic() - t0)

    result: Outcome = _run_async(flavor, main, window_s + 20)
    return result


def consumer_assign_poll(
    flavor: str,
    bootstrap: str,
    tps: Sequence[TopicPartition],
    *,
    want: int,
    window_s: float,
    **options: Any,
) -> Outcome:
    """Assign ``tps`` (no group needed) and poll until ``want`` records came, an
    error was raised, or ``window_s`` passed; the records or the error."""
    cls = _consumer_class(flavor)
    seen: list[Any] = []
    if flavor == "selector":
        t0 = time.monotonic()
        consumer = cls(bootstrap_servers=bootstrap, **options)
        try:
            consumer.assign(list(tps))
            while len(seen) < want and time.monotonic() - t0 < window_s:
                seen.extend(consumer.poll_records(timeout=0.5))
            value: Any = seen
        except Exception as exc:
            value = exc
        finally:
            elapsed = time.monotonic() - t0
            consumer.close(timeout=5.0)
        return Outcome(value, elapsed)

    async def main() -> Outcome:
        t0 = time.monotonic()
        try:
            async with cls(bootstrap_servers=bootstrap, **options) as consumer:
                consumer.assign(list(tps))
                while len(seen) < want and time.monotonic() - t0 < window_s:
                    seen.extend(await consumer.poll_records(timeout=0.5))
                return Outcome(seen, time.monotonic() - t0)
        except Exception as exc:
            return Outcome(exc, time.monotonic() - t0)

    result: Outcome = _run_async(flavor, main, window_s + 20)
    return result


def metadata_request(*names: str) -> Any:
    from kafkacore.protocol.messages import MetadataRequest
    from kafkacore.protocol.messages.metadata_request import MetadataRequestTopic

    return MetadataRequest(
        topics=[MetadataRequestTopic(name=n) for n in names], allow_auto_topic_creation=False
    )
