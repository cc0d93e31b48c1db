"""Thin transports that drive the sans-IO core: selector, asyncio and trio.

Each offers the same client surface in its own idiom (see ``docs/transports.md``):

- :class:`kafkacore.transports.selector.KafkaClient`: blocking calls, loop on a thread;
- :class:`kafkacore.transports.asyncio.AsyncKafkaClient`: awaitables on asyncio;
- :class:`kafkacore.transports.trio.TrioKafkaClient`: awaitables on trio.

Each module also has its admin client (``KafkaAdminClient``,
``AsyncKafkaAdminClient``, ``TrioKafkaAdminClient``; ``docs/admin.md``).

Each module also has its producer and consumer (``KafkaProducer``,
``AsyncKafkaProducer``, ``TrioKafkaProducer``; ``KafkaConsumer``,
``AsyncKafkaConsumer``, ``TrioKafkaConsumer``). ``kerberos_mechanism_factory``
plugs SASL GSSAPI (MIT Kerberos) into any of them (``docs/gssapi.md``).

The classes are also importable from here; the import is lazy so that using
one transport never imports another's event loop library.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from kafkacore.transports._gssapi import kerberos_mechanism_factory
    from kafkacore.transports.asyncio import (
        AsyncKafkaAdminClient,
        AsyncKafkaClient,
        AsyncKafkaConsumer,
        AsyncKafkaProducer,
    )
    from kafkacore.transports.selector import (
        KafkaAdminClient,
        KafkaClient,
        KafkaConsumer,
        KafkaProducer,
    )
    from kafkacore.transports.trio import (
        TrioKafkaAdminClient,
        TrioKafkaClient,
        TrioKafkaConsumer,
        TrioKafkaProducer,
    )

__all__ = [
    "AsyncKafkaAdminClient",
    "AsyncKafkaClient",
    "AsyncKafkaConsumer",
    "AsyncKafkaProducer",
    "KafkaAdminClient",
    "KafkaClient",
    "KafkaConsumer",
    "KafkaProducer",
    "TrioKafkaAdminClient",
    "TrioKafkaClient",
    "TrioKafkaConsumer",
    "TrioKafkaProducer",
    "kerberos_mechanism_factory",
]

_WHERE = {
    "KafkaAdminClient": "kafkacore.transports.selector",
    "AsyncKafkaAdminClient": "kafkacore.transports.asyncio",
    "TrioKafkaAdminClient": "kafkacore.transports.trio",
    "KafkaClient": "kafkacore.transports.selector",
    "KafkaProducer": "kafkacore.transports.selector",
    "KafkaConsumer": "kafkacore.transports.selector",
    "AsyncKafkaClient": "kafkacore.transports.asyncio",
    "AsyncKafkaProducer": "kafkacore.transports.asyncio",
    "AsyncKafkaConsumer": "kafkacore.transports.asyncio",
    "TrioKafkaClient": "kafkacore.transports.trio",
    "TrioKafkaProducer": "kafkacore.transports.trio",
    "TrioKafkaConsumer": "kafkacore.transports.trio",
    "kerberos_mechanism_factory": "kafkacore.transports._gssapi",
}


def __getattr__(name: str) -> Any:
    module = _WHERE.get(name)
    if module is None:
        raise AttributeError(f"module 'kafkacore.transports' has no attribute {name!r}")
    import importlib

    return getattr(importlib.import_module(module), name)
