"""Why the consumer is stuck: the last failure and the last contact (issue 10, fault 8).

Theory of operation
-------------------
:class:`CauseTracker` watches the client's events and every answer to the
consumer's requests. It keeps the last failure (a connect refused,
``NoBrokersAvailable`` after every bootstrap address failed, a failed
metadata refresh, an ``AuthenticationError``, an error answer) with its
time, and the time of the last contact (a connection ready, a response,
fresh metadata). From those:

- :meth:`CauseTracker.explain` turns a timeout into one that names the
  failure behind it (and carries it as ``__cause__``);
- :meth:`CauseTracker.stall_cause` says what failed when nothing has
  answered since;
- :meth:`CauseTracker.check_unreachable` reports ``NoBrokersAvailable``
  when the consumer follows partitions and no broker answered for
  ``default_api_timeout_ms`` (since it was made, for a cluster never
  reached), again after each further period;
  :meth:`CauseTracker.unreachable_deadline` is when that check is due (a
  computed deadline the owner reports);
- :meth:`CauseTracker.poll_ended` reports a cluster never reached when a
  poll that waited for records ends empty: the poll's timeout is the
  caller's bound (issue 26). Before either bound nothing is reported and
  the client retries refused connections with the reconnect backoff, so a
  broker started a moment after its consumer is used;
- :meth:`CauseTracker.check_topics` finds followed topics that metadata
  says do not exist (reported when the set changes) or may not be read.

An authentication failure is not retried: :meth:`CauseTracker.observe`
returns it so the owner fails what waits.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Protocol

from kafkacore.client.connection import ConnectionState
from kafkacore.client.events import (
    BootstrapFailed,
    ConnectionStateChanged,
    MetadataUpdated,
    MetadataUpdateFailed,
    RequestCompleted,
)
from kafkacore.client.metadata import ClusterMetadata
from kafkacore.client.pool import unreachable_within
from kafkacore.consumer.events import TopicsNotFound
from kafkacore.errors import (
    AuthenticationError,
    KafkaTimeoutError,
    NoBrokersAvailable,
    RequestCancelled,
)
from kafkacore.protocol.enums import ErrorCode
from kafkacore.protocol.error_codes import TopicAuthorizationFailedError

__all__ = ["CauseTracker", "ReachClient"]


class ReachClient(Protocol):
    """The part of the client core the tracker asks."""

    cluster: ClusterMetadata

    def unreachable_from_the_start(self) -> NoBrokersAvailable | None: ...


class CauseTracker:
    """The last failure and the last contact; see the module docstring."""

    def __init__(self, client: ReachClient, *, now: float, api_timeout_ms: int) -> None:
        self._client = client
        self._period = api_timeout_ms / 1000
        self.cause: BaseException | None = None
        self.cause_at = float("-inf")
        self.contact_at = now
        self._reported_at = float("-inf")
        self.missing_topics: frozenset[str] = frozenset()
        self._denied_topics: frozenset[str] = frozenset()

    # ------------------------------------------------------------ observing
    def observe(self, event: object, now: float) -> AuthenticationError | None:
        """Note a client event; returns a fresh authentication failure."""
        if isinstance(event, RequestCompleted):
            return self.answered(event.error, now)
        if isinstance(event, MetadataUpdated):
            self.contact_at = now
        elif isinstance(event, ConnectionStateChanged):
            if event.state is ConnectionState.READY:
                self.contact_at = now
            elif event.error is not None:
                return self._note(event.error, now)
        elif isinstance(event, BootstrapFailed | MetadataUpdateFailed):
            return self._note(event.error, now)
        return None

    def answered(self, error: BaseException | None, now: float) -> AuthenticationError | None:
        """A request completed (``error`` None: a broker answered)."""
        if error is None:
            self.contact_at = now
            return None
        return self._note(error, now)

    def _note(self, error: BaseException, now: float) -> AuthenticationError | None:
        if isinstance(error, RequestCancelled):
            return None  # our own doing (close, cancel), not the cluster's
        if (
            isinstance(self.cause, NoBrokersAvailable)
            and self.cause_at >= self.contact_at
            and not isinstance(error, AuthenticationError)
        ):
            # Still unreachable: keep the summary, which names every address.
            self.cause_at = now
            return None
        self.cause, self.cause_at = error, now
        return error if isinstance(error, AuthenticationError) else None

    # ------------------------------------------------------------- queries
    def stall_cause(self) -> BaseException | None:
        """The last failure, when no broker has answered since (None otherwise)."""
        if self.cause is None or self.cause_at < self.contact_at:
            return None
        return self.cause

    def explain(self, error: BaseException, since: float | None) -> BaseException:
        """A timeout that names the failure behind it (and carries it as __cause__)."""
        cause = self.cause
        if cause is None or cause is error or not isinstance(error, KafkaTimeoutError):
            return error
        current = self.cause_at >= self.contact_at
        if not current and (since is None or self.cause_at < since):
            return error
        out = KafkaTimeoutError(f"{error}; last error: {type(cause).__name__}: {cause}")
        out.__cause__ = cause
        return out

    # -------------------------------------------------------- unreachable
    def unreachable_deadline(self, following: bool) -> float | None:
        """When :meth:`check_unreachable` is due (None: not while nothing stalls)."""
        if not following or self.stall_cause() is None:
            return None
        return max(self.contact_at, self._reported_at) + self._period

    def check_unreachable(self, now: float, following: bool) -> NoBrokersAvailable | None:
        """NoBrokersAvailable when it is due (see the module docstring)."""
        due = self.unreachable_deadline(following)
        if due is None or now < due:
            return None
        cause = self.cause
        self._reported_at = now
        unreachable = self._client.unreachable_from_the_start()
        if unreachable is not None:
            what = (
                f"this consumer never reached the cluster in {now - self.contact_at:.0f} s "
                "(default_api_timeout_ms), still trying"
            )
            return unreachable_within(what, unreachable)
        error = NoBrokersAvailable(
            f"no broker has answered this consumer for {now - self.contact_at:.0f} s "
            f"(default_api_timeout_ms), still trying; last error: "
            f"{type(cause).__name__}: {cause}"
        )
        error.__cause__ = cause
        return error

    def poll_ended(self, what: str, waited_s: float, now: float) -> NoBrokersAvailable | None:
        """NoBrokersAvailable for a poll (``what``) that waited ``waited_s`` for
        records and ends empty while the cluster was never reached (None
        otherwise): its timeout was the caller's bound."""
        unreachable = self._client.unreachable_from_the_start()
        if unreachable is None:
            return None
        self._reported_at = now
        return unreachable_within(
            f"{what}: the cluster was never reached within its timeout ({waited_s:g} s), "
            "still trying",
            unreachable,
        )

    # -------------------------------------------------------------- topics
    def check_topics(
        self, wanted: Iterable[str]
    ) -> tuple[TopicsNotFound | None, TopicAuthorizationFailedError | None]:
        """TopicsNotFound when the set of missing followed topics changes; an
        authorization error for topics newly refused (poll raises it, as Java does)."""
        wanted = set(wanted)
        cluster = self._client.cluster
        missing = frozenset(
            t for t in wanted if cluster.topic_error(t) == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
        )
        found = None
        if missing != self.missing_topics:
            self.missing_topics = missing
            if missing:
                found = TopicsNotFound(topics=missing)
        denied = frozenset(
            t for t in wanted if cluster.topic_error(t) == ErrorCode.TOPIC_AUTHORIZATION_FAILED
        )
        fresh = denied - self._denied_topics
        self._denied_topics = denied
        refused = None
        if fresh:
            refused = TopicAuthorizationFailedError(
                f"not allowed to read {sorted(fresh)}; grant READ (and DESCRIBE) on them "
                "to this principal, or stop following them"
            )
            refused.node_id = cluster.topic_errors_from
        return found, refused
