"""Run one producer scenario on any of the three transports, from a plain test.

A scenario is a list of steps; :func:`run` executes them with the chosen
transport's producer and returns what each step produced. Keeping the
steps as data lets one test body cover selector, asyncio and trio.

Steps:
``("send", topic, value, key, headers, partition)`` -> RecordMetadata or the exception;
``("send_many", topic, records)`` or ``("send_many", topic, None, {"values": v, "keys": k})``
-> ManyResult or the exception;
``("flush",)``, ``("init",)``, ``("begin",)``, ``("commit",)``, ``("abort",)``
-> None or the exception; ``("offsets", {tp: offset}, group_id)`` ->
send_offsets_to_transaction; ``("call", fn)`` runs ``fn()`` (blocking) -> its
result; ``("sleep", seconds)`` paces a scenario (not an assertion aid);
``("query", fn)`` -> ``fn(core)`` run on the producer's loop.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import Sequence
from typing import Any

import anyio
import trio

from kafkacore.transports._producer_asyncio import AsyncKafkaProducer
from kafkacore.transports._producer_selector import KafkaProducer
from kafkacore.transports._producer_trio import TrioKafkaProducer

FLAVORS = ("selector", "asyncio", "trio")
Step = tuple[Any, ...]


def _run_selector(bootstrap: str, steps: Sequence[Step], options: dict[str, Any]) -> list[Any]:
    out: list[Any] = []
    pending: list[tuple[int, Any]] = []
    with KafkaProducer(bootstrap, **options) as p:
        for step in steps:
            op = step[0]
            try:
                if op == "send":
                    _, topic, value, key, headers, partition = step
                    pending.append((len(out), p.send(topic, value, key, headers, partition)))
                    out.append(None)
                    continue
                if op == "send_many":
                    pending.append((len(out), p.send_many(step[1], *step[2:3], **_many_kw(step))))
                    out.append(None)
                    continue
                # Transaction boundaries and flush settle what was sent before.
                if op == "sleep":
                    time.sleep(step[1])
                    out.append(None)
                    continue
                _settle(out, pending)
                if op == "query":
                    out.append(p.run_on_loop(step[1], 30))
                elif op == "offsets":
                    p.send_offsets_to_transaction(step[1], step[2], 120)
                    out.append(None)
                else:
                    out.append(step[1]() if op == "call" else _call_sync(p, op))
            except Exception as exc:
                out.append(exc)
        _settle(out, pending, flush=p.flush)
    return out


def _settle(out: list[Any], pending: list[tuple[int, Any]], flush: Any = None) -> None:
    if flush is not None:
        with contextlib.suppress(Exception):  # the futures below carry the errors
            flush(120)
    for i, fut in pending:
        try:
            out[i] = fut.result(120)
        except Exception as exc:
            out[i] = exc
    pending.clear()


def _call_sync(p: KafkaProducer, op: str) -> Any:
    if op == "flush":
        return p.flush(120)
    if op == "init":
        return p.init_transactions(120)
    if op == "begin":
        return p.begin_transaction()
    if op == "commit":
        return p.commit_transaction(120)
    if op == "abort":
        return p.abort_transaction(120)
    raise AssertionError(op)


async def _run_async(producer: Any, steps: Sequence[Step]) -> list[Any]:
    out: list[Any] = []
    pending: list[tuple[int, Any]] = []

    async def settle() -> None:
        for i, slot in pending:
            try:
                out[i] = await slot
            except Exception as exc:
                out[i] = exc
        pending.clear()

    for step in steps:
        op = step[0]
        try:
            if op == "send":
                _, topic, value, key, headers, partition = step
                slot = await producer.send(topic, value, key, headers, partition)
                pending.append((len(out), slot))
                out.append(None)
                continue
            if op == "sleep":
                await anyio.sleep(step[1])
                out.append(None)
                continue
            if op == "send_many":
                await settle()
                out.append(await producer.send_many(step[1], *step[2:3], **_many_kw(step)))
                continue
            await settle()
            if op == "call":
                out.append(step[1]())
            elif op == "query":
                out.append(producer.run_on_loop(step[1]))
            elif op == "offsets":
                out.append(await producer.send_offsets_to_transaction(step[1], step[2], 120))
            elif op == "flush":
                out.append(await producer.flush(120))
            elif op == "init":
                out.append(await producer.init_transactions(120))
            elif op == "begin":
                out.append(await producer.begin_transaction())
            elif op == "commit":
                out.append(await producer.commit_transaction(120))
            elif op == "abort":
                out.append(await producer.abort_transaction(120))
            else:
                raise AssertionError(op)
        except Exception as exc:
            out.append(exc)
    with contextlib.suppress(Exception):  # the slots carry the errors
        await producer.flush(120)
    await settle()
    return out


def run(flavor: str, bootstrap: str, steps: Sequence[Step], **options: Any) -> list[Any]:
    """Run ``steps`` with a fresh producer of ``flavor``; see the module docstring."""
    if flavor == "selector":
        return _run_selector(bootstrap, steps, options)
    if flavor == "asyncio":

        async def main_asyncio() -> list[Any]:
            async with AsyncKafkaProducer(bootstrap, **options) as p:
                return await _run_async(p, steps)

        return asyncio.run(main_asyncio())
    if flavor == "trio":

        async def main_trio() -> list[Any]:
            async with TrioKafkaProducer(bootstrap, **options) as p:
                return await _run_async(p, steps)

        return trio.run(main_trio)
    raise AssertionError(flavor)


def _many_kw(step: tuple[Any, ...]) -> dict[str, Any]:
    """``("send_many", topic, records)`` or ``("send_many", topic, None, {"values": ...})``."""
    return step[3] if len(step) > 3 else {}
