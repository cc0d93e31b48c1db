"""Arguments and results of the feature commands (KIP-584 feature versioning).

A *feature* (``metadata.version``, ``transaction.version``, ``group.version``,
``share.version``, ...) has a range of levels each broker supports and one
level the cluster has *finalized* (switched on). ``describe_features``
reads both, as Java's ``FeatureMetadata``; ``update_features`` moves a
finalized level with a :class:`FeatureUpdate` (KIP-778's upgrade types).
"""

from __future__ import annotations

import enum
from collections.abc import Mapping
from dataclasses import dataclass, field

from kafkacore.admin._checks import check_int

__all__ = [
    "FeatureMetadata",
    "FeatureUpdate",
    "FeatureUpgradeType",
    "FinalizedVersionRange",
    "SupportedVersionRange",
]

#: Feature levels are int16 on the wire.
_MAX_LEVEL = 2**15 - 1


class FeatureUpgradeType(enum.IntEnum):
    """How a finalized level may move (UpdateFeatures v1+ ``UpgradeType``, KIP-778)."""

    #: Raise the level (the only kind allowed when no downgrade is asked for).
    UPGRADE = 1
    #: Lower it where no metadata is lost.
    SAFE_DOWNGRADE = 2
    #: Lower it even if metadata is lost.
    UNSAFE_DOWNGRADE = 3


@dataclass(frozen=True, slots=True)
class FeatureUpdate:
    """The finalized level a feature should have; 0 with a downgrade type removes it."""

    max_version_level: int
    upgrade_type: FeatureUpgradeType = FeatureUpgradeType.UPGRADE

    def __post_init__(self) -> None:
        level = check_int("FeatureUpdate.max_version_level", self.max_version_level, minimum=0)
        if level > _MAX_LEVEL:
            raise ValueError(f"FeatureUpdate.max_version_level: {level} is above {_MAX_LEVEL}")
        if not isinstance(self.upgrade_type, FeatureUpgradeType):
            raise TypeError(
                f"FeatureUpdate.upgrade_type: expected a FeatureUpgradeType, got "
                f"{self.upgrade_type!r}"
            )
        if level == 0 and self.upgrade_type is FeatureUpgradeType.UPGRADE:
            raise ValueError(
                "FeatureUpdate: level 0 removes the feature, which is a downgrade; "
                "pass upgrade_type=FeatureUpgradeType.SAFE_DOWNGRADE or UNSAFE_DOWNGRADE"
            )


@dataclass(frozen=True, slots=True, kw_only=True)
class FinalizedVersionRange:
    """The level range the cluster has switched on for one feature."""

    min_version_level: int
    max_version_level: int


@dataclass(frozen=True, slots=True, kw_only=True)
class SupportedVersionRange:
    """The levels of one feature the answering broker can run."""

    min_version: int
    max_version: int


@dataclass(frozen=True, slots=True, kw_only=True)
class FeatureMetadata:
    """Java's ``FeatureMetadata``: the finalized levels, the epoch of the metadata
    they were read from (in KRaft the metadata log offset of the broker's view,
    which any metadata change moves forward; None from a broker that does not
    say) and the levels the answering broker supports."""

    finalized_features: Mapping[str, FinalizedVersionRange] = field(hash=False)
    finalized_features_epoch: int | None
    supported_features: Mapping[str, SupportedVersionRange] = field(hash=False)
