"""AdminCore against a broker with the authorizer on: ACLs made, seen and removed,
and what they allow a SASL user (``alice``) to see and do."""

from __future__ import annotations

import time
from collections.abc import Iterator

import pytest

from kafkacore.admin import (
    AclBinding,
    AclBindingFilter,
    AclOperation,
    AclPermissionType,
    NewTopic,
    PatternType,
    ResourceType,
)
from kafkacore.protocol.error_codes import (
    ClusterAuthorizationFailedError,
    SecurityDisabledError,
    TopicAuthorizationFailedError,
)
from kafkacore.testing import LocalKafka
from tests.admin.conftest import Admin, open_admin

pytestmark = pytest.mark.broker


@pytest.fixture
def root(kafka_acl_broker: LocalKafka) -> Iterator[Admin]:
    """An admin on PLAINTEXT, where ANONYMOUS is a super user."""
    a = open_admin(kafka_acl_broker.bootstrap)
    yield a
    a.core.close(now=time.monotonic())
    a.driver.close()


@pytest.fixture
def alice(kafka_acl_broker: LocalKafka) -> Iterator[Admin]:
    host, port = kafka_acl_broker.listener("SASL_PLAINTEXT")
    a = open_admin(
        f"{host}:{port}",
        security_protocol="SASL_PLAINTEXT",
        sasl_mechanism="PLAIN",
        sasl_plain_username="alice",
        sasl_plain_password=kafka_acl_broker.users["alice"],
    )
    yield a
    a.core.close(now=time.monotonic())
    a.driver.close()


def test_acls_decide_what_alice_may_do(root: Admin, alice: Admin, unique: str) -> None:
    ok, hidden = f"acl-ok-{unique}", f"acl-no-{unique}"
    created = root.run(
        root.core.create_topics([NewTopic(ok, 1, 1), NewTopic(hidden, 1, 1)], now=root.now)
    )
    assert all(r.ok for r in created.values()), created
    read = AclBinding(
        resource_type=ResourceType.TOPIC,
        resource_name=f"acl-ok-{unique}",
        pattern_type=PatternType.PREFIXED,
        principal="User:alice",
        operation=AclOperation.READ,
    )
    describe = AclBinding(
        resource_type=ResourceType.TOPIC,
        resource_name=ok,
        principal="User:alice",
        operation=AclOperation.DESCRIBE,
    )
    deny_write = AclBinding(
        resource_type=ResourceType.TOPIC,
        resource_name=ok,
        principal="User:alice",
        operation=AclOperation.WRITE,
        permission_type=AclPermissionType.DENY,
    )
    made = root.run(root.core.create_acls([read, describe, deny_write], now=root.now))
    assert all(r.ok for r in made.values()), made

    mine = AclBindingFilter(principal="User:alice", resource_type=ResourceType.TOPIC)
    wait_until(
        lambda: (
            set(root.run(root.core.describe_acls(mine, now=root.now)))
            >= {read, describe, deny_write}
        )
    )
    exact = AclBindingFilter(resource_name=ok, pattern_type=PatternType.LITERAL)
    assert set(root.run(root.core.describe_acls(exact, now=root.now))) == {describe, deny_write}

    seen = alice.run(
        alice.core.describe_topics([ok, hidden], include_authorized_operations=True, now=alice.now)
    )
    ops = seen[ok].result().authorized_operations
    assert ops is not None and {AclOperation.READ, AclOperation.DESCRIBE} <= ops
    assert AclOperation.WRITE not in ops
    assert isinstance(seen[hidden].error, TopicAuthorizationFailedError)

    refused = alice.run(
        alice.core.create_topics([NewTopic(f"acl-new-{unique}", 1, 1)], now=alice.now)
    )
    assert isinstance(refused[f"acl-new-{unique}"].error, TopicAuthorizationFailedError)
    op = alice.core.describe_acls(now=alice.now)
    alice.driver.wait(op)
    assert isinstance(op.error, ClusterAuthorizationFailedError)

    removed = root.run(
        root.core.delete_acls(
            [AclBindingFilter(principal="User:alice", operation=AclOperation.DESCRIBE)],
            now=root.now,
        )
    )
    deleted = removed[
        AclBindingFilter(principal="User:alice", operation=AclOperation.DESCRIBE)
    ].result()
    assert deleted == (describe,)
    wait_until(lambda: describe not in root.run(root.core.describe_acls(mine, now=root.now)))
    cleanup = root.run(root.core.delete_acls([mine], now=root.now))
    assert set(cleanup[mine].result()) == {read, deny_write}


def test_acls_on_a_broker_without_an_authorizer(admin: Admin) -> None:
    op = admin.core.describe_acls(now=admin.now)
    admin.driver.wait(op)
    assert isinstance(op.error, SecurityDisabledError)
    rule = AclBinding(
        resource_type=ResourceType.GROUP,
        resource_name="g",
        principal="User:x",
        operation=AclOperation.READ,
    )
    made = admin.run(admin.core.create_acls([rule], now=admin.now))
    assert isinstance(made[rule].error, SecurityDisabledError)


def wait_until(check: object, timeout: float = 30.0) -> None:
    """ACL changes reach the broker's authorizer through the metadata log: poll."""
    end = time.monotonic() + timeout
    while not check():  # type: ignore[operator]
        assert time.monotonic() < end, "ACLs not visible in time"
        time.sleep(0.2)
