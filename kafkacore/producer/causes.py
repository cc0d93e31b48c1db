"""Why records were not delivered: the last failures the producer saw, and the errors it reports.

Theory of operation
-------------------
A record that is not delivered must say why (issue 10, faults 4 and 8):
the error handed to the caller names what went wrong last (which broker,
lost connection, protocol error, timeout, error code) in its message and
carries it as ``__cause__``, and "topic not present" is said only when a
broker answered and the topic was absent.

:class:`FailureLog` keeps the last failure the producer heard of, from the
client's events (:meth:`FailureLog.note`): per node (a connection that
failed or closed on an error; cleared when one becomes ready), for metadata
(a failed refresh or an exhausted bootstrap; cleared by an answer), for the
producer id (an InitProducerId that failed), and the last
:class:`~kafkacore.errors.AuthenticationError` (cleared by any answer, since
a broker accepted us then). Each batch keeps its own last failed attempt
(``ProducerBatch.last_error``). The functions below word the errors from
those facts; they decide nothing.
"""

from __future__ import annotations

from kafkacore.client import (
    BootstrapFailed,
    ConnectionState,
    ConnectionStateChanged,
    MetadataUpdated,
    MetadataUpdateFailed,
    TopicPartition,
)
from kafkacore.client.response_errors import broker_error
from kafkacore.errors import (
    AuthenticationError,
    BrokerError,
    KafkaTimeoutError,
    LocalProtocolError,
)
from kafkacore.protocol.enums import ErrorCode

__all__ = [
    "FailureLog",
    "auth_error_in",
    "authentication_failed",
    "broker_refusal",
    "expired",
    "metadata_timeout",
    "retry_cannot_help",
    "topic_error",
]


def auth_error_in(error: BaseException | None) -> AuthenticationError | None:
    """The AuthenticationError ``error`` is or was caused by (NoBrokersAvailable after
    every bootstrap address refused us carries it as its cause)."""
    seen = 0
    while error is not None and seen < 8:
        if isinstance(error, AuthenticationError):
            return error
        error = error.__cause__
        seen += 1
    return None


def retry_cannot_help(error: BaseException | None) -> bool:
    """Whether sending the same request again must fail the same way: refused
    credentials, or a mistake of ours (a request that cannot be encoded, no
    common version, a bad argument: :class:`LocalProtocolError`). Such an error
    fails its caller at once; it is never retried (issue 21)."""
    return isinstance(error, LocalProtocolError) or auth_error_in(error) is not None


class FailureLog:
    """The last failures the producer heard of; see the module docstring."""

    __slots__ = ("auth", "metadata", "nodes", "producer_id")

    def __init__(self) -> None:
        self.nodes: dict[int, BaseException] = {}
        self.metadata: BaseException | None = None
        self.producer_id: BaseException | None = None
        self.auth: AuthenticationError | None = None

    def note(self, event: object) -> AuthenticationError | None:
        """Record what a client event says; return the AuthenticationError it reports, if any."""
        if isinstance(event, ConnectionStateChanged):
            if event.state is ConnectionState.READY:
                self.nodes.pop(event.node_id, None)
            elif event.state is ConnectionState.CLOSED and event.error is not None:
                self.nodes[event.node_id] = event.error
                auth = auth_error_in(event.error)
                if auth is not None:
                    self.auth = auth
                return auth
        elif isinstance(event, MetadataUpdated):
            self.metadata = None
            self.auth = None
        elif isinstance(event, MetadataUpdateFailed | BootstrapFailed):
            self.metadata = event.error
            auth = auth_error_in(event.error)
            if auth is not None:
                self.auth = auth
            return auth
        return None


def _records(n: int) -> str:
    return "1 record" if n == 1 else f"{n} records"


def expired(
    count: int,
    tp: TopicPartition,
    delivery_timeout_ms: int,
    reason: str,
    cause: BaseException | None,
    *,
    maybe_written: bool,
) -> KafkaTimeoutError:
    """The error of records not delivered within ``delivery_timeout_ms``."""
    text = (
        f"{_records(count)} for {tp.topic}-{tp.partition} not delivered within "
        f"delivery_timeout_ms={delivery_timeout_ms}: {reason}"
    )
    if cause is not None and str(cause) not in reason:
        text += f" (last error: {type(cause).__name__}: {cause})"
    if maybe_written:
        text += "; an attempt got no answer, so they may or may not be in the log"
    error = KafkaTimeoutError(text)
    error.__cause__ = cause
    return error


def broker_refusal(code: int, detail: str, *, node_id: int | None) -> BrokerError:
    """The generated exception of a non-zero ``code`` that broker ``node_id`` answered.

    The error keeps the code and the broker id (issue 13); ``node_id`` has no
    default so that no call site forgets it.
    """
    error = broker_error(code, detail, node_id=node_id)
    assert error is not None, "broker_refusal needs a non-zero code"
    return error


def topic_error(topic: str, code: int, *, node_id: int | None) -> BrokerError:
    """The error for ``topic`` in broker ``node_id``'s Metadata answer, as an exception."""
    who = "" if node_id is None else f" of broker {node_id}"
    detail = f"Metadata answer{who} for topic {topic!r} carried error code {code}"
    return broker_refusal(code, detail, node_id=node_id)


def metadata_timeout(
    topic: str,
    max_block_ms: int,
    code: int | None,
    failure: BaseException | None,
    *,
    node_id: int | None,
) -> KafkaTimeoutError:
    """The error of records whose topic had no usable metadata within ``max_block_ms``
    (``code``: the topic's code in the last answer, from broker ``node_id``).

    "Not present" only when a broker answered UNKNOWN_TOPIC_OR_PARTITION;
    another code is named as such; without any answer about the topic the
    last metadata failure (no broker reachable, timeout...) is the cause.
    """
    cause: BaseException | None
    if code == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION:
        cause = topic_error(topic, code, node_id=node_id)
        text = (
            f"topic {topic!r} not present in metadata after max_block_ms={max_block_ms}; "
            "create it (is auto-creation off?)"
        )
    elif code:
        cause = topic_error(topic, code, node_id=node_id)
        text = (
            f"topic {topic!r} had no usable metadata after max_block_ms={max_block_ms}: "
            f"the brokers answered {cause}"
        )
    elif failure is not None:
        cause = failure
        text = (
            f"no metadata for topic {topic!r} within max_block_ms={max_block_ms}: "
            f"{type(failure).__name__}: {failure}"
        )
    else:
        cause = None
        text = (
            f"no metadata for topic {topic!r} within max_block_ms={max_block_ms}: no broker "
            "answered a Metadata request in time"
        )
    error = KafkaTimeoutError(text)
    error.__cause__ = cause
    return error


def authentication_failed(what: str, error: AuthenticationError) -> AuthenticationError:
    """``error`` again, saying which records it stopped (same type: callers catch it)."""
    out = AuthenticationError(f"{what} not sent: {error}")
    out.__cause__ = error
    return out
