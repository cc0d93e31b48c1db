"""The client core's ending: KIP-714's graceful close, shutdown and the telemetry pushes.

Closing (KIP-714 *Client termination*): :meth:`ClientClosing.begin_close`
starts a graceful close: the machines with a last word queue it (the
telemetry machine's terminating PushTelemetry; a producer's flush and a
consumer's LeaveGroup are their owners' own operations, finished before),
and :attr:`ClientClosing.closing_done` turns True once nothing more is to
be sent, or when the close's timeout passes. The transport serves the
core's I/O until then, and only then calls :meth:`ClientClosing.shutdown`,
which drops everything at once.

:class:`ClientClosing` is a base of :class:`~kafkacore.client.core.KafkaClientCore`
(as :class:`~kafkacore.client.queries.ClientQueries` is), not an object the
core calls through: the step sends telemetry with no extra frame (issue 11
counts the hops of a produce).
"""

from __future__ import annotations

import math
import random
from typing import TYPE_CHECKING

from kafkacore.client.config import ClientConfig
from kafkacore.client.coordinators import CoordinatorLookups
from kafkacore.client.pool import DEFAULT_LANE
from kafkacore.client.queries import ClientQueries
from kafkacore.client.routing import AnyNode
from kafkacore.errors import RequestCancelled
from kafkacore.protocol.enums import ApiKey
from kafkacore.telemetry.machine import TelemetryMachine, TelemetryResponse

if TYPE_CHECKING:
    from kafkacore.client.connection import BrokerConnection
    from kafkacore.protocol._base import Request

__all__ = ["ClientClosing", "checked_offset"]


class ClientClosing(ClientQueries):
    """The closing half of :class:`~kafkacore.client.core.KafkaClientCore`'s facade."""

    # Set by KafkaClientCore.__init__ (and _init_closing).
    _coordinators: CoordinatorLookups
    _closed: bool
    #: begin_close: when the graceful close gives up waiting (None: not closing).
    _closing_until: float | None
    _close_expired: bool
    #: KIP-714 client telemetry (None when ``enable_metrics_push`` is off).
    telemetry: TelemetryMachine | None

    if TYPE_CHECKING:  # the core's own steps, which the closing sequence runs

        def _commanded(self, now: float) -> None: ...
        def _dispatch(self, now: float) -> None: ...
        def _drain_connections(self, now: float) -> None: ...
        def _close_conn(
            self,
            conn: BrokerConnection,
            error: BaseException | None,
            now: float,
            *,
            reported: bool = False,
            by_user: bool = False,
        ) -> None: ...

    def _init_closing(
        self, cfg: ClientConfig, rng: random.Random, *, now: float, wall_offset: float
    ) -> None:
        self._closed = False
        self._closing_until = None
        self._close_expired = False
        self.telemetry = None
        if cfg.enable_metrics_push:
            self.telemetry = TelemetryMachine(
                rng=rng,
                now=now,
                client_id=cfg.client_id,
                version=cfg.client_software_version,
                retry_backoff_ms=cfg.retry_backoff_ms,
                retry_backoff_max_ms=cfg.retry_backoff_max_ms,
                wall_offset=checked_offset(wall_offset),
                trace=self._out.trace,
            )

    def shutdown(self, *, now: float) -> None:
        """Close everything and cancel every request; the core is unusable afterwards."""
        if self._closed:
            return
        if self.telemetry is not None:
            self._push_terminating(self.telemetry, now)
        self._closed = True
        for slot in list(self._pool.slots.values()):
            if slot.conn is not None:
                self._close_conn(slot.conn, RequestCancelled("client shut down"), now, by_user=True)
        self._requests.fail_queued(RequestCancelled("client shut down"), now)
        self._coordinators.clear()
        self.cluster.failed_update(RequestCancelled("client shut down"), now=now)
        self._refresh.cancel_waits(RequestCancelled("client shut down"))
        self._refresh.announce(None, None)

    def set_wall_offset(self, offset: float) -> None:
        """Unix time minus the transport's clock, in seconds (see ``wall_offset``
        in the constructor): telemetry dates its next points with it."""
        checked = checked_offset(offset)
        if self.telemetry is not None:
            self.telemetry.wall_offset = checked

    def begin_close(self, *, now: float, timeout_ms: int) -> None:
        """Start a graceful close: the machines with a last word queue it.

        KIP-714: the telemetry machine sends one PushTelemetry marked
        ``Terminating`` when the broker gave it a subscription with metrics,
        so that the broker drops this client's state at once (nothing when
        telemetry is off, was never subscribed, or no connection is ready).
        An owner's own last words (a producer's flush, a consumer's commit and
        LeaveGroup) are its operations, finished before it calls this.

        The core goes on working meanwhile. :attr:`closing_done` turns True
        once nothing more is to be sent (the terminating push answered or
        failed) or ``timeout_ms`` after this call, whichever comes first: a
        broker that never answers cannot hold the close. Then the owner calls
        :meth:`shutdown`. A second call changes nothing.
        """
        if not isinstance(timeout_ms, int) or isinstance(timeout_ms, bool):
            raise TypeError(f"begin_close: timeout_ms must be an int, got {timeout_ms!r}")
        if timeout_ms < 0:
            raise ValueError(f"begin_close: timeout_ms must be >= 0, got {timeout_ms}")
        if self._closed or self._closing_until is not None:
            return
        self._closing_until = now + timeout_ms / 1000
        if self.telemetry is not None:
            self.telemetry.initiate_close(now)
        self._commanded(now)

    @property
    def closing(self) -> bool:
        """:meth:`begin_close` was called (or the core is shut down)."""
        return self._closing_until is not None or self._closed

    @property
    def closing_done(self) -> bool:
        """After :meth:`begin_close`: nothing more to send, or its timeout passed
        (the transport may close the sockets now). True after :meth:`shutdown`."""
        if self._closed:
            return True
        if self._closing_until is None:
            return False
        telemetry = self.telemetry
        return (
            self._close_expired
            or telemetry is None
            or not telemetry.active
            or self._auth_error is not None  # nothing can be sent any more
        )

    def _maybe_send_telemetry(self, now: float) -> None:
        """KIP-714: the telemetry machine's request, if one is due, to any broker."""
        telemetry = self.telemetry
        if telemetry is None or not telemetry.active or self._auth_error is not None:
            return
        versions = self._pool.api_versions(None)  # the latest broker's, None before any
        offered = versions is not None and ApiKey.GET_TELEMETRY_SUBSCRIPTIONS in versions
        request = telemetry.poll(
            now, usable=self._pool.any_ready(), metrics=self._out.counters.snapshot, offered=offered
        )
        if request is not None:
            on_done = telemetry.completion(request)
            # One of two requests: named by both responses, the type of on_done.
            sent: Request[TelemetryResponse] = request
            self._requests.enqueue(
                sent, sent.API_KEY, AnyNode(), DEFAULT_LANE, now, on_done=on_done
            )

    def _push_terminating(self, telemetry: TelemetryMachine, now: float) -> None:
        """KIP-714 at :meth:`shutdown` without :meth:`begin_close`: a last push
        marked terminating, written before the connections close (best effort:
        the transport closes the sockets in the same pass and may drop it; a
        graceful close sends it through begin_close instead)."""
        telemetry.initiate_close(now)
        if telemetry.active:
            # Nothing else may reach the wire now: what waits fails first.
            self._requests.fail_queued(RequestCancelled("client shut down"), now)
            self._maybe_send_telemetry(now)
            self._dispatch(now)
            self._drain_connections(now)


def checked_offset(offset: float) -> float:
    """A wall offset as given (seconds), refused when it is no finite number."""
    if isinstance(offset, bool) or not isinstance(offset, (int, float)):
        raise TypeError(f"wall_offset must be a number of seconds, got {offset!r}")
    if not math.isfinite(offset):
        raise ValueError(f"wall_offset must be finite, got {offset!r}")
    return float(offset)
