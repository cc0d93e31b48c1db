"""Say which security protocol a broker's port speaks when ours does not match.

Theory of operation
-------------------
A client configured for PLAINTEXT that connects to a TLS port writes its
ApiVersions request in clear; the broker's TLS engine answers with a TLS
alert record. Read as a Kafka frame, that record's header (content type
0x14..0x17, version 3.x) is a size prefix of 335 MB or more, so the frame
reader's verdict would be "frame size out of bounds", which sends the user
after the wrong option. :func:`tls_answer` recognises the record header in
the first bytes a connection receives, and :func:`wrong_protocol_error`
says what to set instead.

A SASL listener answers ApiVersions (allowed before authentication,
KIP-35/KIP-511) and then closes the connection on the first other request
of a client that does not authenticate. :func:`sasl_close_hint` is the
hint the client core adds to such a close: a connection that reached READY
without SASL, got no answer after ApiVersions and was closed by the broker.

:func:`frame_size_error` rewrites the frame reader's bound error so that it
names the client's real option, ``max_response_bytes``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from kafkacore.errors import DecodeError, KafkaConnectionError

if TYPE_CHECKING:
    from kafkacore.client.config import ClientConfig
    from kafkacore.client.connection import BrokerConnection

__all__ = [
    "frame_size_error",
    "sasl_close_hint",
    "sasl_close_hint_for",
    "tls_answer",
    "wrong_protocol_error",
]

#: TLS record content types: change_cipher_spec, alert, handshake, application_data.
_TLS_CONTENT_TYPES = frozenset({0x14, 0x15, 0x16, 0x17})


def tls_answer(first: bytes | bytearray | memoryview) -> bool:
    """True when ``first`` (the first bytes a connection received) starts a TLS record."""
    if len(first) < 3:
        return False
    return first[0] in _TLS_CONTENT_TYPES and first[1] == 3 and first[2] <= 4


def wrong_protocol_error(peer: str, *, security_protocol: str) -> KafkaConnectionError:
    """The error for a clear-text client whose broker answered with TLS."""
    wanted = "SASL_SSL" if security_protocol == "SASL_PLAINTEXT" else "SSL"
    return KafkaConnectionError(
        f"the {peer} answered with TLS: set security_protocol={wanted} "
        f"(this client uses {security_protocol}, which does not encrypt)"
    )


def sasl_close_hint(security_protocol: str) -> str:
    """What to add to "closed by the broker" when the listener probably wants SASL."""
    wanted = "SASL_SSL" if security_protocol == "SSL" else "SASL_PLAINTEXT"
    return (
        "; the broker answered ApiVersions and then closed the connection without "
        "answering anything else, which is what a SASL listener does to a client that "
        f"does not authenticate: set security_protocol={wanted} and sasl_mechanism"
    )


def sasl_close_hint_for(config: ClientConfig, conn: BrokerConnection) -> str:
    """The hint for a broker's close of ``conn`` ("" unless it looks like a SASL
    listener's: READY without SASL, a request in flight, nothing answered)."""
    if config.sasl or conn.ready_since is None or conn.answered or not conn.in_flight_count:
        return ""
    return sasl_close_hint(config.security_protocol)


def frame_size_error(error: DecodeError, *, max_response_bytes: int) -> DecodeError:
    """The frame reader's bound error, naming the client option that sets the bound."""
    return DecodeError(
        f"{error.reason.split(';')[0]}; the broker is not speaking Kafka on this port, or "
        f"the response is larger than max_response_bytes={max_response_bytes}",
        api=error.api,
        offset=error.offset,
    )
