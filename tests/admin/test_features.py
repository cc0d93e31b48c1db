"""Feature levels (KIP-584, KIP-778) against the scripted cluster."""

from __future__ import annotations

from typing import Any

import pytest

from kafkacore.admin import (
    FeatureMetadata,
    FeatureUpdate,
    FeatureUpgradeType,
    FinalizedVersionRange,
    SupportedVersionRange,
)
from kafkacore.errors import NoCommonVersionError
from kafkacore.protocol import messages as m
from kafkacore.protocol.enums import ApiKey, ErrorCode
from kafkacore.protocol.error_codes import (
    ClusterAuthorizationFailedError,
    InvalidUpdateVersionError,
    UnsupportedVersionError,
)
from tests.admin.fakeadmin import Harness

SAFE = FeatureUpgradeType.SAFE_DOWNGRADE
UNSAFE = FeatureUpgradeType.UNSAFE_DOWNGRADE


def test_describe_features_reads_a_fresh_api_versions_answer() -> None:
    h = Harness()
    h.world.features["group.version"] = 1  # finalized after the connection opened
    h.world.features_epoch = 43
    metadata = h.result(h.core.describe_features(now=h.now))
    assert metadata == FeatureMetadata(
        finalized_features={
            "group.version": FinalizedVersionRange(min_version_level=1, max_version_level=1),
            "metadata.version": FinalizedVersionRange(min_version_level=1, max_version_level=27),
            "transaction.version": FinalizedVersionRange(min_version_level=1, max_version_level=2),
        },
        finalized_features_epoch=43,
        supported_features={
            "group.version": SupportedVersionRange(min_version=0, max_version=1),
            "metadata.version": SupportedVersionRange(min_version=7, max_version=28),
            "transaction.version": SupportedVersionRange(min_version=0, max_version=2),
        },
    )
    body = h.world.requests(ApiKey.API_VERSIONS)[-1]
    assert body.client_software_name == "kafkacore"


def test_a_broker_before_kip_584_has_no_features() -> None:
    h = Harness(versions={ApiKey.API_VERSIONS: (0, 2)})
    metadata = h.result(h.core.describe_features(now=h.now))
    assert metadata == FeatureMetadata(
        finalized_features={}, finalized_features_epoch=None, supported_features={}
    )


def test_a_refused_api_versions_fails_the_call() -> None:
    h = Harness()
    h.result(h.core.describe_features(now=h.now))  # the connection it uses is open now
    h.world.script(
        ApiKey.API_VERSIONS,
        lambda b, body, v: m.ApiVersionsResponse(error_code=ErrorCode.CLUSTER_AUTHORIZATION_FAILED),
    )
    op = h.run(h.core.describe_features(now=h.now))
    assert isinstance(op.error, ClusterAuthorizationFailedError) and op.error.node_id == 0


@pytest.mark.parametrize("version", [1, 2])
def test_validate_only_checks_and_changes_nothing(version: int) -> None:
    h = Harness(versions={ApiKey.UPDATE_FEATURES: (0, version)})
    checked = h.result(
        h.core.update_features(
            {"transaction.version": FeatureUpdate(2), "group.version": FeatureUpdate(1)},
            validate_only=True,
            now=h.now,
        )
    )
    assert list(checked) == ["transaction.version", "group.version"]
    assert all(r.ok for r in checked.values())
    assert h.world.features == {"metadata.version": 27, "transaction.version": 2}
    body = h.world.requests(ApiKey.UPDATE_FEATURES)[-1]
    assert body.validate_only is True
    assert [(u.feature, u.max_version_level, u.upgrade_type) for u in body.feature_updates] == [
        ("transaction.version", 2, 1),
        ("group.version", 1, 1),
    ]


def test_an_invalid_level_is_refused_per_feature_up_to_v1() -> None:
    h = Harness(versions={ApiKey.UPDATE_FEATURES: (0, 1)})
    results = h.result(
        h.core.update_features(
            {"group.version": FeatureUpdate(1), "transaction.version": FeatureUpdate(9)},
            validate_only=True,
            now=h.now,
        )
    )
    assert results["group.version"].ok
    error = results["transaction.version"].error
    assert isinstance(error, InvalidUpdateVersionError) and error.node_id is not None
    assert "UpdateFeatures, feature 'transaction.version' (broker" in str(error)
    assert "outside 0..2" in str(error)


def test_from_v2_a_refusal_fails_the_whole_call() -> None:
    h = Harness()
    op = h.run(
        h.core.update_features(
            {"group.version": FeatureUpdate(1), "transaction.version": FeatureUpdate(9)},
            validate_only=True,
            now=h.now,
        )
    )
    assert isinstance(op.error, InvalidUpdateVersionError)
    assert "UpdateFeatures (broker 0 at " in str(op.error) and "outside 0..2" in str(op.error)
    assert h.world.features == {"metadata.version": 27, "transaction.version": 2}


def test_downgrades_need_their_type() -> None:
    h = Harness()
    op = h.run(h.core.update_features({"metadata.version": FeatureUpdate(26)}, now=h.now))
    assert isinstance(op.error, InvalidUpdateVersionError) and "downgrade" in str(op.error)
    done = h.result(
        h.core.update_features(
            {
                "metadata.version": FeatureUpdate(26, SAFE),
                "transaction.version": FeatureUpdate(0, UNSAFE),
            },
            now=h.now,
        )
    )
    assert all(r.ok for r in done.values())
    assert h.world.features == {"metadata.version": 26}
    body = h.world.requests(ApiKey.UPDATE_FEATURES)[-1]
    assert [u.upgrade_type for u in body.feature_updates] == [2, 3]


def test_version_0_says_downgrade_with_a_flag() -> None:
    h = Harness(versions={ApiKey.UPDATE_FEATURES: (0, 0)})
    assert h.result(
        h.core.update_features({"metadata.version": FeatureUpdate(26, SAFE)}, now=h.now)
    )["metadata.version"].ok
    body = h.world.requests(ApiKey.UPDATE_FEATURES)[-1]
    assert body.feature_updates[0].allow_downgrade is True
    for update, validate_only, words in (
        (FeatureUpdate(25, UNSAFE), False, "UNSAFE_DOWNGRADE needs UpdateFeatures v1+"),
        (FeatureUpdate(27), True, "validate_only needs UpdateFeatures v1+"),
    ):
        op = h.run(
            h.core.update_features(
                {"metadata.version": update}, validate_only=validate_only, now=h.now
            )
        )
        assert isinstance(op.error, NoCommonVersionError) and words in str(op.error)
    assert len(h.world.requests(ApiKey.UPDATE_FEATURES)) == 1


def test_not_controller_is_asked_again() -> None:
    h = Harness(2)
    h.world.script(
        ApiKey.UPDATE_FEATURES,
        lambda b, body, v: m.UpdateFeaturesResponse(error_code=ErrorCode.NOT_CONTROLLER),
    )
    done = h.result(h.core.update_features({"group.version": FeatureUpdate(1)}, now=h.now))
    assert done["group.version"].ok and h.world.features["group.version"] == 1
    assert len(h.world.requests(ApiKey.UPDATE_FEATURES)) == 2


def test_an_unsupported_version_answer_fails_every_feature() -> None:
    h = Harness()
    h.world.script(
        ApiKey.UPDATE_FEATURES,
        lambda b, body, v: m.UpdateFeaturesResponse(
            error_code=ErrorCode.UNSUPPORTED_VERSION, error_message="no"
        ),
    )
    op = h.run(h.core.update_features({"group.version": FeatureUpdate(1)}, now=h.now))
    assert isinstance(op.error, UnsupportedVersionError)
    assert h.completions(op) == 1


@pytest.mark.parametrize(
    ("make", "error", "words"),
    [
        (lambda: FeatureUpdate(-1), ValueError, "0 or more"),
        (lambda: FeatureUpdate(40000), ValueError, "above 32767"),
        (lambda: FeatureUpdate(True), TypeError, "an int"),
        (lambda: FeatureUpdate(1, 2), TypeError, "FeatureUpgradeType"),  # type: ignore[arg-type]
        (lambda: FeatureUpdate(0), ValueError, "removes the feature"),
    ],
)
def test_a_bad_feature_update_says_why(make: Any, error: type[Exception], words: str) -> None:
    with pytest.raises(error, match=words):
        make()


@pytest.mark.parametrize(
    ("updates", "kwargs", "error", "words"),
    [
        ({}, {}, ValueError, "at least one"),
        ([("group.version", FeatureUpdate(1))], {}, TypeError, "mapping"),
        ({"group.version": 1}, {}, TypeError, "expected a FeatureUpdate"),
        ({"": FeatureUpdate(1)}, {}, ValueError, "empty"),
        ({"group.version": FeatureUpdate(1)}, {"validate_only": 1}, TypeError, "validate_only"),
    ],
)
def test_bad_update_arguments_are_refused_before_anything_is_sent(
    updates: Any, kwargs: dict[str, Any], error: type[Exception], words: str
) -> None:
    h = Harness()
    before = len(h.world.seen)
    with pytest.raises(error, match=words):
        h.core.update_features(updates, now=h.now, **kwargs)
    assert len(h.world.seen) == before and h.core.pending_operations == 0


def test_up_to_v1_a_feature_the_controller_bounced_is_asked_again() -> None:
    from kafkacore.protocol.messages import update_features_response as r

    h = Harness(2, versions={ApiKey.UPDATE_FEATURES: (0, 1)})
    h.world.script(
        ApiKey.UPDATE_FEATURES,
        lambda b, body, v: m.UpdateFeaturesResponse(
            results=[
                r.UpdatableFeatureResult(feature="group.version", error_code=0),
                r.UpdatableFeatureResult(
                    feature="transaction.version", error_code=ErrorCode.NOT_CONTROLLER
                ),
                r.UpdatableFeatureResult(feature="not.asked", error_code=0),
            ]
        ),
    )
    done = h.result(
        h.core.update_features(
            {"group.version": FeatureUpdate(1), "transaction.version": FeatureUpdate(2)},
            validate_only=True,
            now=h.now,
        )
    )
    assert list(done) == ["group.version", "transaction.version"]
    assert all(x.ok for x in done.values())
    again = h.world.requests(ApiKey.UPDATE_FEATURES)[-1]
    assert [u.feature for u in again.feature_updates] == ["transaction.version"]
