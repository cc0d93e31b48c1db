"""kafka-python's ACL calls run on kafkacore's admin clients with only the import changed.

The flow is kafka-python's own ACL usage (its integration test's): describe
with an ``ACLFilter`` (``(acls, NoError)``), create ``ACL`` objects
(``{"succeeded": [...], "failed": [...]}``), delete by filter
(``[(filter, acls, error)]``), against a broker with the authorizer on.
"""

from __future__ import annotations

import asyncio
import uuid

import pytest

from kafkacore.admin import AclBinding, AclOperation, ResourceType
from kafkacore.testing import LocalKafka
from kafkacore.transports.asyncio import AsyncKafkaAdminClient
from kafkacore.transports.selector import (
    ACL,
    ACLFilter,
    ACLOperation,
    ACLPermissionType,
    ACLResourcePatternType,
    KafkaAdminClient,
    NoError,
    ResourcePattern,
    ResourcePatternFilter,
)
from kafkacore.transports.selector import ResourceType as KafkaPythonResourceType


def _topic_filter(name: str) -> ACLFilter:
    return ACLFilter(
        principal=None,
        host="*",
        operation=ACLOperation.ANY,
        permission_type=ACLPermissionType.ANY,
        resource_pattern=ResourcePatternFilter(
            KafkaPythonResourceType.TOPIC, name, ACLResourcePatternType.LITERAL
        ),
    )


@pytest.mark.broker
def test_kafka_python_acl_flow_on_the_blocking_admin(kafka_acl_broker: LocalKafka) -> None:
    topic = f"acl-compat-{uuid.uuid4().hex[:8]}"
    with KafkaAdminClient(bootstrap_servers=kafka_acl_broker.bootstrap) as admin:
        acls, error = admin.describe_acls(_topic_filter(topic))
        assert (acls, error) == ([], NoError)

        acl = ACL(
            principal="User:alice",
            host="*",
            operation=ACLOperation.READ,
            permission_type=ACLPermissionType.ALLOW,
            resource_pattern=ResourcePattern(ResourceType.TOPIC, topic),
        )
        result = admin.create_acls([acl])
        assert result == {"succeeded": [acl], "failed": []}

        acls, error = admin.describe_acls(_topic_filter(topic))
        assert (acls, error) == ([acl], NoError)

        deleted = admin.delete_acls([_topic_filter(topic)])
        assert deleted == [(_topic_filter(topic), [acl], NoError)]
        assert admin.describe_acls(_topic_filter(topic)) == ([], NoError)


@pytest.mark.broker
def test_kafka_python_acl_shapes_on_the_asyncio_admin(kafka_acl_broker: LocalKafka) -> None:
    topic = f"acl-compat-{uuid.uuid4().hex[:8]}"
    acl = ACL(
        "User:bob",
        "*",
        AclOperation.WRITE,
        ACLPermissionType.DENY,
        ResourcePattern(ResourceType.TOPIC, topic),
    )

    async def main() -> None:
        async with AsyncKafkaAdminClient(kafka_acl_broker.bootstrap) as admin:
            assert await admin.create_acls([acl]) == {"succeeded": [acl], "failed": []}
            assert await admin.describe_acls(_topic_filter(topic)) == ([acl], NoError)
            # kafkacore's own filter on the same rule answers in kafkacore's shape.
            bindings = await admin.describe_acls(_topic_filter(topic).to_binding_filter())
            assert bindings == (acl.to_binding(),) and isinstance(bindings[0], AclBinding)
            assert await admin.delete_acls([_topic_filter(topic)]) == [
                (_topic_filter(topic), [acl], NoError)
            ]

    asyncio.run(main())


def test_mixed_shapes_and_open_rules_are_refused_before_anything_is_sent() -> None:
    acl = ACL(
        "User:a",
        "*",
        AclOperation.READ,
        ACLPermissionType.ALLOW,
        ResourcePattern(ResourceType.TOPIC, "t"),
    )
    # Nothing reaches a broker: the checks come before any request (the client
    # is closed at the end, so its loop does not retry the dead address on).
    with KafkaAdminClient("127.0.0.1:1") as admin:
        with pytest.raises(TypeError, match="both kafka-python ACL objects and kafkacore"):
            admin.create_acls([acl, acl.to_binding()])
        with pytest.raises(
            ValueError, match=r"ACL: resource_pattern\.resource_name, principal and host"
        ):
            admin.create_acls(
                [
                    ACL(
                        None,
                        "*",
                        AclOperation.READ,
                        ACLPermissionType.ALLOW,
                        ResourcePattern(ResourceType.TOPIC, "t"),
                    )
                ]
            )
        with pytest.raises(
            TypeError, match=r"ACLFilter\.resource_pattern: expected a ResourcePatternFilter"
        ):
            admin.delete_acls([ACLFilter(None, None, AclOperation.ANY, ACLPermissionType.ANY, "t")])  # type: ignore[arg-type]
    assert ACL.from_binding(acl.to_binding()) == acl
