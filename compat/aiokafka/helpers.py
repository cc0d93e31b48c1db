"""aiokafka's ``aiokafka.helpers``: ``create_ssl_context``."""

from __future__ import annotations

import ssl
from collections.abc import Callable
from os import PathLike
from typing import Any

__all__ = ["create_ssl_context"]


def create_ssl_context(
    *,
    cafile: str | bytes | PathLike[Any] | None = None,
    capath: str | bytes | PathLike[Any] | None = None,
    cadata: str | bytes | None = None,
    certfile: str | bytes | PathLike[Any] | None = None,
    keyfile: str | bytes | PathLike[Any] | None = None,
    password: Callable[[], str | bytes | bytearray] | str | bytes | bytearray | None = None,
) -> ssl.SSLContext:
    """A client TLS context that verifies the brokers (hostname included), with
    the given CA and, for mutual TLS, the client's certificate; pass it as
    ``ssl_context=`` (kafkacore's clients take it as aiokafka's do)."""
    context = ssl.create_default_context(
        purpose=ssl.Purpose.SERVER_AUTH, cafile=cafile, capath=capath, cadata=cadata
    )
    if certfile is not None:
        context.load_cert_chain(certfile=certfile, keyfile=keyfile, password=password)
    return context
