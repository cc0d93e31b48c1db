"""A broker with the authorizer on, SASL and mTLS listeners, and the ACLs the tests need.

One node (session scope) with PLAINTEXT (ANONYMOUS: a super user, used here
only to create ACLs and topics), SASL_PLAINTEXT, SASL_SSL and MTLS (client
certificates required; the certificate's CN is the principal). ACLs, made
through kafkacore's own client with CreateAcls:

* ``User:alice``: everything on topics, groups and transactional ids whose
  names start with ``ok-``; nothing else;
* ``User:localkafka-client`` (the mTLS certificate): everything on topics
  starting with ``ok-``.

Names starting with ``no-`` have no ACL: every access to them is denied.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import pytest

from kafkacore.testing import LocalKafka
from kafkacore.testing.config import MTLS_CLIENT_CN
from kafkacore.testing.pytest_plugin import _keep

FLAVORS = ("selector", "asyncio", "trio")

# Kafka's enum values (AclOperation, ResourceType, PatternType, AclPermissionType).
_TOPIC, _GROUP, _TXN_ID = 2, 3, 5
_OP_ALL = 2
_PREFIXED = 4
_ALLOW = 3


@dataclass(frozen=True)
class Secure:
    kafka: LocalKafka
    run: str  # unique per session: prefixes of names in this run

    def ok(self, what: str) -> str:
        return f"ok-{self.run}-{what}"

    def no(self, what: str) -> str:
        return f"no-{self.run}-{what}"

    def sasl(
        self, listener: str, mechanism: str, user: str = "alice", password: str | None = None
    ) -> dict[str, Any]:
        host, port = self.kafka.listener(listener)
        options: dict[str, Any] = {
            "bootstrap_servers": f"{host}:{port}",
            "security_protocol": listener,
            "sasl_mechanism": mechanism,
            "sasl_plain_username": user,
            "sasl_plain_password": self.kafka.users[user] if password is None else password,
        }
        if listener == "SASL_SSL":
            options["ssl_cafile"] = str(self.kafka.ca_file)
        return options

    def mtls(self, *, cert: bool = True) -> dict[str, Any]:
        host, port = self.kafka.listener("MTLS")
        options: dict[str, Any] = {
            "bootstrap_servers": f"{host}:{port}",
            "security_protocol": "SSL",
            "ssl_cafile": str(self.kafka.ca_file),
        }
        if cert:
            options["ssl_certfile"] = str(self.kafka.client_cert)
            options["ssl_keyfile"] = str(self.kafka.client_key)
        return options


def _create_acls(kafka: LocalKafka) -> None:
    from kafkacore.protocol.messages import CreateAclsRequest
    from kafkacore.protocol.messages.create_acls_request import AclCreation
    from kafkacore.transports.selector import KafkaClient

    def allow(resource_type: int, principal: str) -> AclCreation:
        return AclCreation(
            resource_type=resource_type,
            resource_name="ok-",
            resource_pattern_type=_PREFIXED,
            principal=principal,
            host="*",
            operation=_OP_ALL,
            permission_type=_ALLOW,
        )

    creations = [allow(t, "User:alice") for t in (_TOPIC, _GROUP, _TXN_ID)]
    creations.append(allow(_TOPIC, f"User:{MTLS_CLIENT_CN}"))
    with KafkaClient(kafka.bootstrap) as client:
        response = client.send(CreateAclsRequest(creations=creations), timeout=60)
    codes = [r.error_code for r in response.results]
    assert codes == [0] * len(creations), f"CreateAcls: {response.results}"


@pytest.fixture(scope="session")
def secure_kafka(kafka_libs: object) -> Iterator[Secure]:
    with LocalKafka(
        listeners=("PLAINTEXT", "SASL_PLAINTEXT", "SASL_SSL", "MTLS"),
        authorizer=True,
        keep_workdir=_keep(),
    ) as kafka:
        _create_acls(kafka)
        secure = Secure(kafka, uuid.uuid4().hex[:6])
        for name in ("t", "t2"):
            kafka.create_topic(secure.ok(name), partitions=1)
        kafka.create_topic(secure.no("t"), partitions=1)
        yield secure


@pytest.fixture(params=FLAVORS)
def flavor(request: pytest.FixtureRequest) -> str:
    return str(request.param)


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        if "secure_kafka" in getattr(item, "fixturenames", ()):
            item.add_marker("broker")
