"""Thin transports that drive the sans-IO core: selector, asyncio and trio.

Each offers the same client surface in its own idiom (see ``docs/transports.md``):

- :class:`transports.selector.KafkaClient`: blocking calls, loop on a thread;
- :class:`transports.asyncio.AsyncKafkaClient`: awaitables on asyncio;
- :class:`transports.trio.TrioKafkaClient`: awaitables on trio.

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
    from transports._gssapi import kerberos_mechanism_factory
    from transports.asyncio import (
        AsyncKafkaAdminClient,
        AsyncKafkaClient,
        AsyncKafkaConsumer,
        AsyncKafkaProducer,
    )
    from transports.selector import KafkaAdminClient, KafkaClient, KafkaConsumer, KafkaProducer
    from transports.trio import (
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
    "KafkaAdminClient": "transports.selector",
    "AsyncKafkaAdminClient": "transports.asyncio",
    "TrioKafkaAdminClient": "transports.trio",
    "KafkaClient": "transports.selector",
    "KafkaProducer": "transports.selector",
    "KafkaConsumer": "transports.selector",
    "AsyncKafkaClient": "transports.asyncio",
    "AsyncKafkaProducer": "transports.asyncio",
    "AsyncKafkaConsumer": "transports.asyncio",
    "TrioKafkaClient": "transports.trio",
    "TrioKafkaProducer": "transports.trio",
    "TrioKafkaConsumer": "transports.trio",
    "kerberos_mechanism_factory": "transports._gssapi",
}


def __getattr__(name: str) -> Any:
    module = _WHERE.get(name)
    if module is None:
        raise AttributeError(f"module 'transports' has no attribute {name!r}")
    import importlib

    return getattr(importlib.import_module(module), name)
