"""Thin transports that drive the sans-IO core: selector, asyncio and trio.

Each offers the same client surface in its own idiom (see ``docs/transports.md``):

- :class:`transports.selector.KafkaClient`: blocking calls, loop on a thread;
- :class:`transports.asyncio.AsyncKafkaClient`: awaitables on asyncio;
- :class:`transports.trio.TrioKafkaClient`: awaitables on trio.

The classes are also importable from here; the import is lazy so that using
one transport never imports another's event loop library.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from transports.asyncio import AsyncKafkaClient
    from transports.selector import KafkaClient
    from transports.trio import TrioKafkaClient

__all__ = ["AsyncKafkaClient", "KafkaClient", "TrioKafkaClient"]

_WHERE = {
    "KafkaClient": "transports.selector",
    "AsyncKafkaClient": "transports.asyncio",
    "TrioKafkaClient": "transports.trio",
}


def __getattr__(name: str) -> Any:
    module = _WHERE.get(name)
    if module is None:
        raise AttributeError(f"module 'transports' has no attribute {name!r}")
    import importlib

    return getattr(importlib.import_module(module), name)
