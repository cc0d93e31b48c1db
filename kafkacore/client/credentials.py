"""Credentials the core asks the transport for, instead of blocking its own step.

Theory of operation
-------------------
Two parts of SASL may block: an OAUTHBEARER token provider (a round trip to
an identity provider) and a Kerberos step (a service ticket from the KDC).
Run inside the core's step they would stall an asyncio or trio loop, and
every other connection with it. With ``ClientConfig.defer_credentials`` set
(by a transport that handles it), the connection's SASL exchange pauses
there instead and the core emits a
:class:`~kafkacore.client.events.CredentialsNeeded` event carrying a
:class:`CredentialsCall`: the call to make. The transport makes it its own
way (a worker thread, ``run_in_executor``, ``trio.to_thread``, or awaiting a
coroutine function; see ``transports/_credentials.py``) and hands the
outcome back with :meth:`KafkaClientCore.credentials_ready`.

The exchange waits at most ``request_timeout_ms`` for the answer (the auth
deadline); then the connection fails with a KafkaTimeoutError and is
retried after the reconnect backoff. A provider that raises fails the
connection the same way, with a KafkaConnectionError whose cause is the
provider's exception (the provider is asked again on the next connection);
a Kerberos step that raises AuthenticationError fails it as a refused
authentication, as when the step runs inline.

Without ``defer_credentials`` the calls are made inline, as before.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from enum import Enum
from typing import Any

__all__ = ["CredentialKind", "CredentialsCall"]


class CredentialKind(Enum):
    """What a credentials call computes."""

    #: The OAUTHBEARER token provider: returns the token (a str); may be a
    #: coroutine function.
    OAUTH_TOKEN = "oauth_token"
    #: One step of a SASL mechanism that may block (GSSAPI/Kerberos): returns
    #: the next token to send (bytes), or None when the exchange is complete.
    SASL_STEP = "sasl_step"


@dataclass(frozen=True, slots=True)
class CredentialsCall:
    """One call a connection's SASL exchange waits for."""

    kind: CredentialKind
    #: SASL mechanism name (``"OAUTHBEARER"``, ``"GSSAPI"``...), for messages.
    mechanism: str
    #: Make it with no arguments; its result (or exception) is the answer.
    call: Callable[[], Any]
