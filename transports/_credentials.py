"""Fulfil the core's ``CredentialsNeeded`` events, one function per I/O style.

Theory of operation
-------------------
With ``ClientConfig(defer_credentials=True)`` the client core does not call
an OAUTHBEARER token provider or run a Kerberos step inside its own step: it
emits :class:`~kafkacore.client.events.CredentialsNeeded` (see
:mod:`kafkacore.client.credentials`) and waits for
``core.credentials_ready(request_id, result, error=..., now=...)``. A driver
that sees the event hands it to the function of its style here; the function
makes ``event.call`` where it cannot stall the loop and hands the outcome,
as a :class:`CredentialsAnswer`, to the driver's ``deliver`` callback, which
must run :func:`answer` (or the same call) on the loop that owns the core:

* selector: :func:`fulfil_in_thread` (a daemon worker thread; ``deliver``
  is called on that thread, so pass the I/O loop's thread-safe
  ``call_soon``) or :func:`fulfil_inline` (on the I/O thread itself, which
  blocks it: only for calls known to be quick);
* asyncio: :func:`fulfil_asyncio` (``loop.run_in_executor`` for a blocking
  callable, ``await`` for a coroutine function), started as a task;
* trio: :func:`fulfil_trio` (``trio.to_thread.run_sync`` for a blocking
  callable, ``await`` for a coroutine function), started in a nursery.

A coroutine-function provider on the selector transport runs in its worker
thread under ``asyncio.run``. Exceptions of the call become the answer's
``error`` (the core turns them into a connection failure); they never
escape into the driver.
"""

from __future__ import annotations

import inspect
import threading
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Protocol

from kafkacore.client.events import CredentialsNeeded

__all__ = [
    "CredentialsAnswer",
    "answer",
    "fulfil_asyncio",
    "fulfil_in_thread",
    "fulfil_inline",
    "fulfil_trio",
]


@dataclass(frozen=True, slots=True)
class CredentialsAnswer:
    """The outcome of one ``CredentialsNeeded`` call: ``result`` or ``error``."""

    request_id: int
    result: Any = None
    error: BaseException | None = None


class _AnswersCredentials(Protocol):
    def credentials_ready(
        self, request_id: int, result: Any = None, *, error: BaseException | None = None, now: float
    ) -> bool: ...


#: Called with the answer; must get it to the core on the core's own loop.
Deliver = Callable[[CredentialsAnswer], None]


def answer(core: _AnswersCredentials, reply: CredentialsAnswer, *, now: float) -> bool:
    """Give ``reply`` to ``core`` (on its loop); False if nobody waits for it any more."""
    return core.credentials_ready(reply.request_id, reply.result, error=reply.error, now=now)


def _is_async(call: Callable[[], Any]) -> bool:
    return inspect.iscoroutinefunction(call)


def _run_blocking(event: CredentialsNeeded) -> CredentialsAnswer:
    """Make the call on this thread (a coroutine function under ``asyncio.run``)."""
    try:
        if _is_async(event.call):
            # Imported for a coroutine-function provider only: the selector
            # transport otherwise never loads asyncio (some 8 MiB of RSS).
            import asyncio

            result = asyncio.run(event.call())
        else:
            result = event.call()
    except Exception as exc:
        return CredentialsAnswer(event.request_id, error=exc)
    return CredentialsAnswer(event.request_id, result=result)


def fulfil_inline(event: CredentialsNeeded) -> CredentialsAnswer:
    """Selector, on the I/O thread: make the call now (blocks the loop meanwhile)."""
    return _run_blocking(event)


def fulfil_in_thread(event: CredentialsNeeded, deliver: Deliver) -> threading.Thread:
    """Selector: make the call on a daemon worker thread, then ``deliver`` the
    answer from that thread (post it to the I/O loop, e.g. ``call_soon_threadsafe``)."""
    worker = threading.Thread(
        target=lambda: deliver(_run_blocking(event)),
        name=f"kafkacore-credentials-{event.request_id}",
        daemon=True,
    )
    worker.start()
    return worker


async def fulfil_asyncio(event: CredentialsNeeded, deliver: Deliver) -> None:
    """asyncio: await a coroutine function, else run the callable in the loop's
    default executor; ``deliver`` runs on the loop."""
    import asyncio  # loaded already: this runs on an asyncio loop

    try:
        if _is_async(event.call):
            result = await event.call()
        else:
            result = await asyncio.get_running_loop().run_in_executor(None, event.call)
    except Exception as exc:
        deliver(CredentialsAnswer(event.request_id, error=exc))
        return
    deliver(CredentialsAnswer(event.request_id, result=result))


async def fulfil_trio(event: CredentialsNeeded, deliver: Deliver) -> None:
    """trio: await a coroutine function, else run the callable in a worker thread
    (``trio.to_thread.run_sync``); ``deliver`` runs in the trio task."""
    import trio  # only trio drivers need it

    try:
        if _is_async(event.call):
            result = await event.call()
        else:
            result = await trio.to_thread.run_sync(event.call)
    except Exception as exc:
        deliver(CredentialsAnswer(event.request_id, error=exc))
        return
    deliver(CredentialsAnswer(event.request_id, result=result))
