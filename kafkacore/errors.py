"""Exception hierarchy of kafkacore, split by who is to blame.

* :class:`LocalProtocolError`: the caller asked for something the protocol or
  the current state does not allow (bad argument, wrong state, a field that a
  version cannot carry). Fix the calling code.
* :class:`ConfigError`: an option (a constructor keyword) is wrong: a bad
  value, or (:class:`UnknownOptionError`) a name the class does not know. A
  ``ValueError`` (``UnknownOptionError`` also a ``TypeError``, as Python's own
  "unexpected keyword argument") and a ``LocalProtocolError``, so every
  validation of every class can be caught one way, whichever config raised it.
* :class:`RemoteProtocolError`: the broker sent bytes that break the protocol.
  :class:`DecodeError` is the only error a decoder raises.
* :class:`BrokerError`: the broker answered with an error code. One subclass
  per code lives in :mod:`kafkacore.protocol.error_codes` (generated); each
  carries ``retriable`` and ``invalid_metadata`` flags as the Java client does.
* :class:`KafkaConnectionError` and friends: facts reported by a transport
  (refused, lost, timed out), surfaced through the core unchanged.

Across the split, three bases say what a caller can do about an error, as
Java's exception hierarchy (and kafka-python's, which follows it) does:
:class:`RetriableError` (the same call may succeed later: timeouts, lost
connections, and the broker codes whose Java exception is a
``RetriableException``), :class:`InvalidMetadataError` (retriable after a
metadata refresh) and :class:`AuthorizationError` (an ACL refused the
principal). The generated broker classes derive from them by Java's own
hierarchy, so ``except RetriableError`` catches every retriable code.
"""

from __future__ import annotations

from typing import ClassVar

__all__ = [
    "AuthenticationError",
    "AuthorizationError",
    "BrokerError",
    "ConfigError",
    "DecodeError",
    "InvalidArgumentError",
    "InvalidMetadataError",
    "KafkaConnectionError",
    "KafkaError",
    "KafkaTimeoutError",
    "LocalProtocolError",
    "NoBrokersAvailable",
    "NoCommonVersionError",
    "RemoteProtocolError",
    "RequestCancelled",
    "RetriableError",
    "UnknownOptionError",
    "WrongArgumentsError",
]


class KafkaError(Exception):
    """Base of every error kafkacore raises on purpose."""

    #: Whether the same call may succeed if tried again later (Java's
    #: ``RetriableException``; kafka-python's flag of the same name).
    retriable: ClassVar[bool] = False
    #: Whether cluster metadata should be refreshed before trying again.
    invalid_metadata: ClassVar[bool] = False


class RetriableError(KafkaError):
    """A transient condition: the same call may succeed later.

    A base class, never raised itself: timeouts, lost connections and the
    broker codes whose Java exception is retriable derive from it.
    """

    retriable = True


class InvalidMetadataError(RetriableError):
    """Retriable once the client has refreshed its metadata (a leader moved, a
    topic is not known yet, a connection was lost): Java's
    ``InvalidMetadataException``. A base class, never raised itself."""

    invalid_metadata = True


class LocalProtocolError(KafkaError):
    """The caller misused the API; the message says what to change."""


class ConfigError(LocalProtocolError, ValueError):
    """An option has a bad value; the message names the class, the option and what is wanted."""


class UnknownOptionError(ConfigError, TypeError):
    """A keyword option the class does not know; the message names the closest known ones."""


class InvalidArgumentError(LocalProtocolError, ValueError):
    """An argument of a call has a bad value (a negative offset or timestamp, a
    partition this consumer is not assigned); the message names it. A
    ``ValueError`` too, as kafka-python raises for the same mistakes."""


class WrongArgumentsError(LocalProtocolError, TypeError):
    """A call was given the wrong set of arguments (both of two alternatives, or
    neither); a ``TypeError`` too, as Python's own for a bad call."""


class RemoteProtocolError(KafkaError):
    """The broker broke the protocol."""


class DecodeError(RemoteProtocolError):
    """Bytes could not be decoded.

    Names what was being decoded (``api``: message or structure name,
    ``version``), which ``field`` and the byte ``offset`` where it failed;
    ``where`` names the peer (e.g. ``"broker 1 at h:9092"``) once a
    connection knows it (see :meth:`located`).
    """

    def __init__(
        self,
        reason: str,
        *,
        api: str | None = None,
        version: int | None = None,
        field: str | None = None,
        offset: int | None = None,
        where: str | None = None,
    ) -> None:
        self.reason = reason
        self.api = api
        self.version = version
        self.field = field
        self.offset = offset
        self.where = where
        parts = []
        if api is not None:
            parts.append(api if version is None else f"{api} v{version}")
        if field is not None:
            parts.append(f"field {field}")
        if offset is not None:
            parts.append(f"at byte {offset}")
        text = f"{', '.join(parts)}: {reason}" if parts else reason
        super().__init__(f"{where}: {text}" if where else text)

    def located(self, where: str) -> DecodeError:
        """The same error naming the peer that sent the bytes (this one as its cause)."""
        if self.where is not None:
            return self
        located = DecodeError(
            self.reason,
            api=self.api,
            version=self.version,
            field=self.field,
            offset=self.offset,
            where=where,
        )
        located.__cause__ = self
        return located


class NoCommonVersionError(LocalProtocolError):
    """No version of an API is supported by both kafkacore and the broker.

    Raised before anything is sent. Not the broker's UNSUPPORTED_VERSION
    answer (code 35, :class:`kafkacore.protocol.error_codes.UnsupportedVersionError`),
    which says the broker refused a version it was sent.
    """


class BrokerError(KafkaError):
    """The broker answered with a non-zero error code."""

    code: ClassVar[int] = -1
    name: ClassVar[str] = "UNKNOWN_SERVER_ERROR"
    retriable: ClassVar[bool] = False
    invalid_metadata: ClassVar[bool] = False

    #: The broker that answered with the code (None when not known): the
    #: error keeps both its code and who sent it (issue 11).
    node_id: int | None = None

    #: The code again, under the name kafka-python and aiokafka give it.
    errno: ClassVar[int] = -1

    def __init_subclass__(cls, **kwargs: object) -> None:
        super().__init_subclass__(**kwargs)
        cls.errno = cls.code

    def __init__(self, message: str | None = None, *, node_id: int | None = None) -> None:
        self.message = message
        self.node_id = node_id
        text = self.name if not message else f"{self.name}: {message}"
        super().__init__(text)


class AuthorizationError(BrokerError):
    """An ACL refused the principal (topic, group, cluster, transactional id,
    ...): Java's ``AuthorizationException``. A base class of the generated
    ``*AuthorizationFailedError`` codes."""


class AuthenticationError(KafkaError):
    """SASL or TLS authentication failed; retrying with the same credentials will not help."""


class KafkaConnectionError(InvalidMetadataError):
    """A connection could not be made or was lost."""


class KafkaTimeoutError(RetriableError):
    """A deadline passed before the operation completed."""


class RequestCancelled(KafkaError):
    """The request was cancelled by the caller or by close()."""


class NoBrokersAvailable(KafkaConnectionError):
    """No bootstrap address answered."""
