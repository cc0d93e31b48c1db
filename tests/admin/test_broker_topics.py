"""AdminCore against a real broker: topics, cluster, configs, records."""

from __future__ import annotations

from kafkacore.admin import NewTopic
from localkafka import LocalKafka
from tests.admin.conftest import Admin


def test_probe_features(admin: Admin, kafka_broker: LocalKafka) -> None:
    desc = admin.run(admin.core.describe_cluster(now=admin.now))
    print(desc)
    print(admin.core.client.finalized_features())
    ops = admin.run(admin.core.create_topics([NewTopic("probe-x", 2, 1)], now=admin.now))
    print(dict(ops))
