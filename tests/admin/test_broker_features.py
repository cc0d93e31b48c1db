"""Feature levels on a real Kafka 4.3.1 broker (KIP-584, KIP-778): described as
the broker finalized them, and updates checked with ``validate_only`` (a valid
level accepted, an invalid one refused with a clear error), nothing changed."""

from __future__ import annotations

import pytest

from kafkacore.admin import FeatureUpdate, FeatureUpgradeType
from kafkacore.protocol.error_codes import InvalidUpdateVersionError
from tests.admin.conftest import Admin

pytestmark = pytest.mark.broker

#: The features a Kafka 4.x KRaft cluster finalizes at start (besides metadata.version).
KAFKA_4_FEATURES = {
    "transaction.version",
    "group.version",
    "share.version",
    "streams.version",
    "eligible.leader.replicas.version",
}


def test_describe_features_shows_metadata_version_and_the_4x_features(admin: Admin) -> None:
    features = admin.run(admin.core.describe_features(now=admin.now))
    finalized, supported = features.finalized_features, features.supported_features
    assert {"metadata.version", *KAFKA_4_FEATURES} <= set(finalized)
    metadata = finalized["metadata.version"]
    # Kafka 4.x starts at metadata.version 4.0-IV3 (22) or later.
    assert metadata.max_version_level >= 22
    assert supported["metadata.version"].min_version <= metadata.max_version_level
    assert metadata.max_version_level <= supported["metadata.version"].max_version
    assert finalized["transaction.version"].max_version_level == 2  # KIP-890's new protocol
    assert "kraft.version" in supported
    assert features.finalized_features_epoch is not None and features.finalized_features_epoch >= 0


def test_validate_only_updates_are_checked_and_change_nothing(admin: Admin) -> None:
    before = admin.run(admin.core.describe_features(now=admin.now))
    valid = admin.run(
        admin.core.update_features(
            {
                "transaction.version": FeatureUpdate(1, FeatureUpgradeType.SAFE_DOWNGRADE),
                "group.version": FeatureUpdate(1),
            },
            validate_only=True,
            now=admin.now,
        )
    )
    assert list(valid) == ["transaction.version", "group.version"]
    assert all(r.ok for r in valid.values()), valid

    too_high = before.supported_features["transaction.version"].max_version + 1
    for update, words in (
        (FeatureUpdate(too_high), f"Invalid update version {too_high}"),
        (FeatureUpdate(1), "without setting the upgrade type"),  # a downgrade, not asked for
    ):
        op = admin.core.update_features(
            {"transaction.version": update}, validate_only=True, now=admin.now
        )
        admin.driver.wait(op, timeout=30)
        assert isinstance(op.error, InvalidUpdateVersionError), op.error
        assert words in str(op.error) and "transaction.version" in str(op.error)
        assert op.error.node_id == 1 and "UpdateFeatures (broker 1 at" in str(op.error)

    after = admin.run(admin.core.describe_features(now=admin.now))
    assert after.finalized_features == before.finalized_features
    assert after.supported_features == before.supported_features
    # In KRaft the epoch is the metadata offset of the broker's view: other
    # metadata (a topic made meanwhile) moves it, never backwards.
    assert (
        after.finalized_features_epoch is not None and before.finalized_features_epoch is not None
    )
    assert after.finalized_features_epoch >= before.finalized_features_epoch
