"""Real-broker fixtures of the admin tests: an AdminCore driven over sockets.

``admin`` is a fresh :class:`~kafkacore.admin.AdminCore` on the shared
``kafka_broker`` (PLAINTEXT), driven by :class:`tests.admin.sockdriver.SocketDriver`.
The broker with the authorizer on is the kit's ``kafka_acl_broker`` (one per
session, shared with tests/cli): PLAINTEXT is a super user (ANONYMOUS),
SASL_PLAINTEXT authenticates the users ``admin`` (a super user), ``alice``
and ``bob``, and it issues delegation tokens.
"""

from __future__ import annotations

import random
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import pytest

from kafkacore.admin import AdminConfig, AdminCore
from kafkacore.client.config import ClientConfig
from kafkacore.testing import LocalKafka
from tests.admin.sockdriver import SocketDriver


@dataclass
class Admin:
    """An AdminCore and the driver that serves it."""

    core: AdminCore
    driver: SocketDriver

    def run(self, op: Any, *, timeout: float = 60.0) -> Any:
        """The operation's value (raises its error)."""
        return self.driver.result(op, timeout=timeout)

    @property
    def now(self) -> float:
        return time.monotonic()


def open_admin(bootstrap: str, *, api_timeout_ms: int = 30000, **client: Any) -> Admin:
    core = AdminCore(
        AdminConfig(default_api_timeout_ms=api_timeout_ms),
        now=time.monotonic(),
        rng=random.Random(7),
        client_config=ClientConfig(bootstrap_servers=bootstrap, **client),
    )
    return Admin(core, SocketDriver(core))


@pytest.fixture
def admin(kafka_broker: LocalKafka) -> Iterator[Admin]:
    a = open_admin(kafka_broker.bootstrap)
    yield a
    a.core.close(now=time.monotonic())
    a.driver.close()


@pytest.fixture
def unique() -> str:
    """A per-test name suffix (topics and groups outlive tests on the shared broker)."""
    return uuid.uuid4().hex[:8]
