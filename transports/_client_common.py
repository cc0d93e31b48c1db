"""What every client does, whatever its I/O idiom: the client's sans-IO surface.

Theory of operation
-------------------
The three clients (blocking, asyncio, trio) take the same options and
differ only in how a caller waits. What a call *does* is written here once,
in :class:`ClientSurface`, as core commands run on the transport's loop:
each takes ``now`` and registers the caller's completion (``done(value,
error)``, which fills the idiom's future) with the
:class:`~kafkacore.transports._router.Router`, which resolves it when the core's
event arrives. The idiom supplies ``_setup`` (its driver) and the waiting.
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from typing import Any

from kafkacore.client import ClientConfig, KafkaClientCore, RequestHandle, Target

from ._common import ClientState, make_parts
from ._router import Completion, Router

__all__ = ["ClientSurface"]


class ClientSurface:
    """The calls every client offers; see the module docstring."""

    _NAME = "Client"  # the public class name, for messages

    def __init__(
        self,
        bootstrap_servers: str | Sequence[str] | None = "localhost:9092",
        *,
        ssl_server_hostname: str | None = None,
        rng: random.Random | None = None,
        **options: Any,
    ) -> None:
        """Options as ``ClientConfig``, plus ``ssl_server_hostname`` and ``rng``."""
        self._parts = make_parts(
            self._NAME,
            bootstrap_servers,
            ssl_server_hostname=ssl_server_hostname,
            rng=rng,
            options=options,
        )
        self.config: ClientConfig = self._parts.config
        self._router = Router()
        self._state = ClientState.NEW
        self._setup()

    def _setup(self) -> None:
        """Build the idiom's driver (the core comes when the client starts)."""
        raise NotImplementedError

    @property
    def state(self) -> ClientState:
        return self._state

    def _build_core(self, now: float) -> KafkaClientCore:
        return KafkaClientCore(self.config, now=now, rng=self._parts.rng)

    # -- core commands ------------------------------------------------------------
    def _issue(
        self,
        core: KafkaClientCore,
        request: Any,
        *,
        target: Target | None,
        lane: str | None,
        timeout_ms: int | None,
        done: Completion,
        now: float,
    ) -> RequestHandle[Any]:
        """Send ``request``; ``done`` gets its response or error."""
        kwargs: dict[str, Any] = {"now": now, "target": target, "timeout_ms": timeout_ms}
        if lane is not None:
            kwargs["lane"] = lane
        handle = core.send(request, **kwargs)
        self._router.expect_request(handle, done)
        return handle

    def _withdraw(self, core: KafkaClientCore, handle: RequestHandle[Any], now: float) -> None:
        """The caller gave up (cancelled, timed out): cancel the request in the core."""
        if not handle.done:
            self._router.forget(handle)
            core.cancel(handle, now=now)

    def _refresh(
        self,
        core: KafkaClientCore,
        topics: Sequence[str] | None,
        done: Completion,
        now: float,
    ) -> None:
        """Track ``topics`` too and refresh metadata; ``done`` gets the update."""
        if topics:
            core.set_topics(core.topics | set(topics), now=now)
        self._router.expect_metadata(core.request_metadata_update(now=now), done)
