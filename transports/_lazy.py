"""Lazy exports for the transport modules (PEP 562).

``kafkacore.transports.selector`` (and ``asyncio``, ``trio``) export the
client, producer, consumer, share consumer and admin client of their
transport, plus the admin's ACL and config types. Importing all of them
eagerly made a program that only produces load the consumer's, the share
consumer's and the admin's machines too (about 110 more kafkacore modules
than it uses). Each module names where its exports live; a name is
imported on first access (attribute, ``from X import Y``) and then kept in
the module's namespace, so later lookups are plain attribute reads.
``dir()`` lists the lazy names beside the loaded ones. Type checkers see
the names through the modules' ``if TYPE_CHECKING:`` imports (the hook is
defined under ``if not TYPE_CHECKING:``, so a misspelt name is still an
error to mypy).
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping
from typing import Any

__all__ = ["ADMIN_TYPES", "lazy_exports"]

#: The admin's ACL and config types, exported by every transport module.
ADMIN_TYPES: Mapping[str, str] = {
    **dict.fromkeys(
        (
            "ACL",
            "ACLFilter",
            "ACLOperation",
            "ACLPermissionType",
            "ACLResourcePatternType",
            "NoError",
            "ResourcePattern",
            "ResourcePatternFilter",
            "ResourceType",
        ),
        "._admin_acls",
    ),
    **dict.fromkeys(("ConfigResource", "NewPartitions", "NewTopic"), "._admin_common"),
    "ConfigResourceType": "kafkacore.admin",
}


def lazy_exports(
    namespace: dict[str, Any], where: Mapping[str, str]
) -> tuple[Callable[[str], Any], Callable[[], list[str]]]:
    """The ``__getattr__`` and ``__dir__`` of the module whose ``globals()`` is ``namespace``.

    ``where`` maps each lazy name to the module that defines it, absolute or
    relative to the module's package.
    """
    module_name = namespace["__name__"]
    package = namespace["__package__"]

    def __getattr__(name: str) -> Any:
        source = where.get(name)
        if source is None:
            raise AttributeError(f"module {module_name!r} has no attribute {name!r}")
        value = getattr(importlib.import_module(source, package), name)
        namespace[name] = value
        return value

    def __dir__() -> list[str]:
        return sorted({*namespace, *where})

    return __getattr__, __dir__
