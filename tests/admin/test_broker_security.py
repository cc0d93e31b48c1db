"""AdminCore against a real broker: SCRAM credentials it sets authenticate a
new client (so the salted password is right), and client quotas."""

from __future__ import annotations

import os
import time

import pytest

from kafkacore.admin import (
    ClientQuotaEntity,
    ClientQuotaFilter,
    ScramCredentialDeletion,
    ScramCredentialInfo,
    ScramCredentialUpsertion,
    ScramMechanism,
)
from kafkacore.errors import AuthenticationError
from kafkacore.protocol.error_codes import ResourceNotFoundError
from kafkacore.testing import LocalKafka
from tests.admin.conftest import Admin, open_admin

pytestmark = pytest.mark.broker


@pytest.mark.parametrize("mechanism", [ScramMechanism.SCRAM_SHA_256, ScramMechanism.SCRAM_SHA_512])
def test_a_scram_user_made_by_the_admin_can_log_in(
    admin: Admin, kafka_broker: LocalKafka, unique: str, mechanism: ScramMechanism
) -> None:
    user, password = f"adm-{unique}", "pw-" + unique
    made = admin.run(
        admin.core.alter_user_scram_credentials(
            [
                ScramCredentialUpsertion(
                    user=user,
                    mechanism=mechanism,
                    password=password,
                    salt=os.urandom(32),
                    iterations=8192,
                )
            ],
            now=admin.now,
        )
    )
    assert made[user].ok
    seen = admin.run(admin.core.describe_user_scram_credentials([user], now=admin.now))
    assert seen[user].result() == (ScramCredentialInfo(mechanism=mechanism, iterations=8192),)

    host, port = kafka_broker.listener("SASL_PLAINTEXT")
    sasl_mechanism = (
        "SCRAM-SHA-256" if mechanism is ScramMechanism.SCRAM_SHA_256 else "SCRAM-SHA-512"
    )
    end = time.monotonic() + 30
    while True:  # credentials reach the SASL layer through the metadata log
        guest = open_admin(
            f"{host}:{port}",
            security_protocol="SASL_PLAINTEXT",
            sasl_mechanism=sasl_mechanism,
            sasl_plain_username=user,
            sasl_plain_password=password,
        )
        try:
            op = guest.core.describe_cluster(now=guest.now)
            guest.driver.wait(op, timeout=30)
            if op.error is None:
                break
            assert isinstance(op.error, AuthenticationError), op.error
            assert time.monotonic() < end, op.error
        finally:
            guest.core.close(now=time.monotonic())
            guest.driver.close()
        time.sleep(0.3)

    gone = admin.run(
        admin.core.alter_user_scram_credentials(
            [ScramCredentialDeletion(user=user, mechanism=mechanism)], now=admin.now
        )
    )
    assert gone[user].ok
    after = admin.run(admin.core.describe_user_scram_credentials([user], now=admin.now))
    assert isinstance(after[user].error, ResourceNotFoundError)


def test_client_quotas(admin: Admin, unique: str) -> None:
    entity = ClientQuotaEntity.of({"user": f"q-{unique}", "client-id": "app"})
    made = admin.run(
        admin.core.alter_client_quotas(
            {entity: {"producer_byte_rate": 1048576.0, "request_percentage": 200.0}}, now=admin.now
        )
    )
    assert made[entity].ok
    end = time.monotonic() + 30
    while True:
        found = admin.run(
            admin.core.describe_client_quotas(
                [ClientQuotaFilter.named("user", f"q-{unique}")], now=admin.now
            )
        )
        if entity in found:
            break
        assert time.monotonic() < end, found
        time.sleep(0.2)
    assert found[entity] == {"producer_byte_rate": 1048576.0, "request_percentage": 200.0}
    strict = admin.run(
        admin.core.describe_client_quotas(
            [ClientQuotaFilter.named("user", f"q-{unique}")], strict=True, now=admin.now
        )
    )
    assert entity not in strict  # it also names a client id
    bad = ClientQuotaEntity.of({"user": f"q-{unique}"})
    refused = admin.run(
        admin.core.alter_client_quotas({bad: {"no_such_quota": 1.0}}, now=admin.now)
    )
    assert refused[bad].error is not None
    removed = admin.run(
        admin.core.alter_client_quotas(
            {entity: {"producer_byte_rate": None, "request_percentage": None}}, now=admin.now
        )
    )
    assert removed[entity].ok
