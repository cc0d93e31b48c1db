"""Registry of every Kafka API kafkacore can encode and decode.

Theory of operation
-------------------
The facts (keys, version ranges, first flexible version, listeners, the
KIP-848-style ``latestVersionUnstable`` flag) are generated from the
schemas into :mod:`kafkacore.protocol._api_table`; the routing kind comes
from a small hand-written table in the generator (``codegen/routing.py``),
because the schemas carry no routing (:class:`Routing` is generated into
:mod:`kafkacore.protocol.enums` and re-exported here). :data:`APIS` maps the
API key to an immutable :class:`ApiInfo`; message classes load lazily on
first use of ``request_type``/``response_type``, so importing the registry
is cheap.
"""

from __future__ import annotations

import importlib
from collections.abc import Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import cast

from kafkacore.protocol._api_table import API_TABLE, REMOVED_APIS
from kafkacore.protocol._base import Request, Response
from kafkacore.protocol.enums import ApiKey, Routing

__all__ = ["APIS", "APIS_BY_NAME", "REMOVED_APIS", "ApiInfo", "Routing"]


@dataclass(frozen=True, slots=True, kw_only=True)
class ApiInfo:
    """Facts about one API key."""

    api_key: int
    name: str
    min_version: int
    max_version: int
    #: First version using compact encodings and tagged fields (KIP-482), or None.
    first_flexible_version: int | None
    routing: Routing
    #: The highest version is not advertised by brokers by default; a client
    #: building its own maximum should use ``max_version - 1``.
    latest_unstable: bool
    listeners: tuple[str, ...]
    _module: str

    @property
    def max_stable_version(self) -> int:
        return self.max_version - 1 if self.latest_unstable else self.max_version

    @property
    def request_type(self) -> type[Request[Response]]:
        return cast(type[Request[Response]], self._load(self.name + "Request", self._module))

    @property
    def response_type(self) -> type[Response]:
        module = self._module.removesuffix("_request") + "_response"
        return cast(type[Response], self._load(self.name + "Response", module))

    def is_flexible(self, version: int) -> bool:
        return self.first_flexible_version is not None and version >= self.first_flexible_version

    def request_header_version(self, version: int) -> int:
        """Request header v2 for flexible versions, else v1 (v0 is gone in 4.x)."""
        return 2 if self.is_flexible(version) else 1

    def response_header_version(self, version: int) -> int:
        """Response header v1 for flexible versions, else v0.

        ApiVersions responses always use v0 (KIP-511), so that a client can read
        the error of a broker that does not support the version it sent.
        """
        if self.api_key == ApiKey.API_VERSIONS:
            return 0
        return 1 if self.is_flexible(version) else 0

    @staticmethod
    def _load(cls_name: str, module: str) -> type:
        mod = importlib.import_module(f"kafkacore.protocol.messages.{module}")
        return cast(type, getattr(mod, cls_name))


def _build() -> dict[int, ApiInfo]:
    apis = {}
    for key, name, lo, hi, flex, module, routing, unstable, listeners in API_TABLE:
        apis[key] = ApiInfo(
            api_key=key,
            name=name,
            min_version=lo,
            max_version=hi,
            first_flexible_version=flex,
            routing=Routing(routing),
            latest_unstable=unstable,
            listeners=listeners,
            _module=module,
        )
    return apis


#: API key -> facts, for every API with at least one valid version in 4.3.1.
APIS: Mapping[int, ApiInfo] = MappingProxyType(_build())
#: Name ("Metadata", "Fetch", ...) -> facts.
APIS_BY_NAME: Mapping[str, ApiInfo] = MappingProxyType({a.name: a for a in APIS.values()})
