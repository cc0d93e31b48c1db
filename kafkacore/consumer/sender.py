"""How the consumer's machines send requests: one callable, given to each.

The facade (:class:`~kafkacore.consumer.core.ConsumerCore`) sends through
the client core (``StackedMachine._request``), notes each answer for the
cause tracking, and calls ``on_done(response, error, now)`` inside a later
step. ``build=`` fills version-dependent fields for the version negotiated
on the connection that carries the request (the stacking contract).
Unit tests hand the machines a recording fake instead.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Protocol

from kafkacore.client.routing import Target

__all__ = ["OnDone", "Send"]

#: Called with (response, error, now) when a request completes.
OnDone = Callable[[Any, BaseException | None, float], None]


class Send(Protocol):
    def __call__(
        self,
        request: Any,
        on_done: OnDone,
        *,
        now: float,
        target: Target,
        lane: str = ...,
        timeout_ms: int | None = None,
        build: Callable[[int], Any] | None = None,
    ) -> None: ...
