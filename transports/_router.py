"""Route core events to the waiting user calls, for every transport.

Theory of operation
-------------------
A user call issues a core command, receives a plain handle, and registers a
*completion* for it here: a callable ``done(value, error)`` that resolves
the transport's own future (``concurrent.futures.Future``, an asyncio
future, a trio event). When the bridge hands over an event:

- ``RequestCompleted`` resolves the completion registered for its handle;
- ``MetadataUpdated`` / ``MetadataUpdateFailed`` resolve the completions of
  the metadata waiters the event names (a ``connect()`` waits on the core's
  bootstrap wait, which the core completes with the first metadata or fails
  at its own deadline, issue 26), and the first ``MetadataUpdated`` marks
  the client bootstrapped: a later ``connect()`` returns at once;
- a ``MetadataUpdateFailed`` carrying an ``AuthenticationError``, or an
  ``AuthenticationFailed``: authentication is not retriable (the core has
  stopped); the router remembers it, so a later ``connect()`` fails at once
  with it instead of waiting for metadata that will never come;
- anything else (``BootstrapFailed`` too: a report, the core keeps
  retrying) goes to the optional ``on_other`` listener.

A completion is called at most once and then forgotten; the router holds
at most one entry per pending handle, a bound the core's
``max_queued_requests`` already enforces.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from kafkacore.client.events import (
    AuthenticationFailed,
    MetadataUpdated,
    MetadataUpdateFailed,
    RequestCompleted,
)
from kafkacore.errors import AuthenticationError

__all__ = ["Completion", "Router"]

Completion = Callable[[Any, BaseException | None], None]


class Router:
    """Maps handles to completions; see the module docstring."""

    __slots__ = ("_bootstrapped", "_fatal", "_metadata", "_requests", "on_other")

    def __init__(self, on_other: Callable[[object], None] | None = None) -> None:
        self._requests: dict[object, Completion] = {}
        self._metadata: dict[object, Completion] = {}
        self._bootstrapped = False
        self._fatal: BaseException | None = None
        self.on_other = on_other

    @property
    def bootstrapped(self) -> bool:
        """True once any metadata arrived."""
        return self._bootstrapped

    @property
    def pending(self) -> int:
        return len(self._requests) + len(self._metadata)

    def expect_request(self, handle: object, done: Completion) -> None:
        self._requests[handle] = done

    def expect_metadata(self, waiter: object, done: Completion) -> None:
        self._metadata[waiter] = done

    def expect_bootstrap(self, done: Completion, wait: Callable[[], object]) -> None:
        """``done`` once the client is bootstrapped: at once if it is (or stopped on
        an authentication failure), else with the core's bootstrap wait ``wait()``."""
        if self._fatal is not None:
            done(None, self._fatal)
        elif self._bootstrapped:
            done(None, None)
        else:
            self._metadata[wait()] = done

    def forget(self, handle: object) -> None:
        """Drop the completion of a call the user abandoned (cancelled, timed out)."""
        self._requests.pop(handle, None)
        self._metadata.pop(handle, None)

    def fail_all(self, error: BaseException) -> None:
        """Resolve every pending call with ``error`` (the client is closing)."""
        requests, self._requests = self._requests, {}
        metadata, self._metadata = self._metadata, {}
        for done in [*requests.values(), *metadata.values()]:
            done(None, error)

    def on_event(self, event: object) -> None:
        if isinstance(event, RequestCompleted):
            done = self._requests.pop(event.handle, None)
            if done is not None:
                done(event.response, event.error)
        elif isinstance(event, MetadataUpdated):
            self._bootstrapped = True
            for waiter in event.waiters:
                done = self._metadata.pop(waiter, None)
                if done is not None:
                    done(event, None)
            if self.on_other is not None:
                self.on_other(event)
        elif isinstance(event, MetadataUpdateFailed):
            for waiter in event.waiters:
                done = self._metadata.pop(waiter, None)
                if done is not None:
                    done(None, event.error)
            if isinstance(event.error, AuthenticationError):
                # Bad credentials or a rejected certificate: the core will not
                # get metadata with these settings (it failed its waits too).
                self._fatal = event.error
            if self.on_other is not None:
                self.on_other(event)
        elif isinstance(event, AuthenticationFailed):
            self._fatal = event.error
            if self.on_other is not None:
                self.on_other(event)
        elif self.on_other is not None:
            self.on_other(event)
