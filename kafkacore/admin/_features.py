"""Feature levels (KIP-584): ``describe_features`` (ApiVersions, any broker) and
``update_features`` (UpdateFeatures, the controller; KIP-778's upgrade types).

``describe_features`` asks a broker afresh, as Java's ``describeFeatures``
does, rather than reading what the connection learnt when it opened: the
finalized levels can move while a connection lives, and the epoch says
which metadata they come from.

``update_features`` answers per feature up to v1. From v2 the broker gives
one top-level outcome for the whole request: success settles every feature;
a refusal fails the operation with that error (as a refusal of every
feature does before v2). NOT_CONTROLLER and the controller's mutation
quota are asked again, as for the other controller commands.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from kafkacore.admin._base import CONTROLLER_RETRY, AdminBase, items_outcome, single_outcome
from kafkacore.admin._checks import check_bool, check_mapping, check_str, check_timeout
from kafkacore.admin._tokens import broker_error
from kafkacore.admin.feature_types import (
    FeatureMetadata,
    FeatureUpdate,
    FeatureUpgradeType,
    FinalizedVersionRange,
    SupportedVersionRange,
)
from kafkacore.admin.results import ItemResults
from kafkacore.client.handles import RequestHandle
from kafkacore.client.routing import AnyNode, Controller
from kafkacore.errors import NoCommonVersionError
from kafkacore.operation import Operation
from kafkacore.protocol import messages as m
from kafkacore.protocol.messages.update_features_request import FeatureUpdateKey

__all__ = ["FeatureCommands"]

_Updated = m.UpdateFeaturesResponse

#: ApiVersions v3 carries the features (KIP-584) and the client's software name (KIP-511).
_FEATURES_VERSION = 3
#: UpdateFeatures v1 has ValidateOnly and UpgradeType (KIP-778); v2 answers only top-level.
_UPGRADE_TYPE_VERSION = 1
_TOP_LEVEL_ONLY_VERSION = 2


class FeatureCommands(AdminBase):
    """Feature commands of :class:`~kafkacore.admin.AdminCore`."""

    def describe_features(
        self, *, timeout_ms: int | None = None, now: float
    ) -> Operation[FeatureMetadata]:
        """The finalized feature levels (with their epoch) and the levels the answering
        broker supports: Java's ``FeatureMetadata``."""
        kind = "describe_features"
        job = self._begin(kind, [None], single_outcome, check_timeout(kind, timeout_ms), now)
        config = self.client.config

        def build(version: int) -> m.ApiVersionsRequest:
            if version < _FEATURES_VERSION:
                return m.ApiVersionsRequest()
            return m.ApiVersionsRequest(
                client_software_name=config.client_software_name,
                client_software_version=config.client_software_version,
            )

        def answer(
            response: m.ApiVersionsResponse, handle: RequestHandle[m.ApiVersionsResponse], t: float
        ) -> None:
            if response.error_code:
                error = broker_error(
                    self.client, response.error_code, None, "ApiVersions", node_id=handle.node_id
                )
                self._failed(job, [None], error, send, t)
                return
            epoch = response.finalized_features_epoch
            job.settle(
                None,
                FeatureMetadata(
                    finalized_features={
                        f.name: FinalizedVersionRange(
                            min_version_level=f.min_version_level,
                            max_version_level=f.max_version_level,
                        )
                        for f in sorted(response.finalized_features, key=lambda f: f.name)
                    },
                    finalized_features_epoch=epoch if epoch >= 0 else None,
                    supported_features={
                        f.name: SupportedVersionRange(
                            min_version=f.min_version, max_version=f.max_version
                        )
                        for f in sorted(response.supported_features, key=lambda f: f.name)
                    },
                ),
            )

        def send(keys: list[Any], t: float) -> None:
            self._send(
                job,
                keys,
                m.ApiVersionsRequest(),
                answer,
                send,
                now=t,
                target=AnyNode(),
                build=build,
            )

        send([None], now)
        return self._started(job, now)

    def update_features(
        self,
        updates: Mapping[str, FeatureUpdate],
        *,
        validate_only: bool = False,
        timeout_ms: int | None = None,
        now: float,
    ) -> Operation[ItemResults[str, None]]:
        """Move finalized levels: ``{"transaction.version": FeatureUpdate(2)}``; with
        ``validate_only`` the controller only checks the change (v1+)."""
        kind = "update_features"
        wanted: dict[str, FeatureUpdate] = {}
        for name, update in check_mapping(f"{kind}: updates", updates).items():
            check_str(f"{kind}: updates key", name)
            if not isinstance(update, FeatureUpdate):
                raise TypeError(f"{kind}[{name!r}]: expected a FeatureUpdate, got {update!r}")
            wanted[name] = update
        if not wanted:
            raise ValueError(f"{kind}: updates: name at least one feature")
        check_bool(f"{kind}: validate_only", validate_only)
        job = self._begin(kind, list(wanted), items_outcome, check_timeout(kind, timeout_ms), now)

        def send(keys: list[str], t: float) -> None:
            budget = self._budget_ms(job, t)

            def build(version: int) -> m.UpdateFeaturesRequest:
                return _update_request(kind, version, keys, wanted, validate_only, budget)

            def answer(response: _Updated, handle: RequestHandle[_Updated], t2: float) -> None:
                node = handle.node_id
                code = response.error_code
                if code:
                    error = broker_error(
                        self.client, code, response.error_message, "UpdateFeatures", node_id=node
                    )
                    if code in CONTROLLER_RETRY:
                        self._controller_retry(job, [(k, error) for k in keys], send, t2)
                    else:
                        self._fail_all(job, keys, error)
                    return
                if handle.api_version is not None and handle.api_version >= _TOP_LEVEL_ONLY_VERSION:
                    for key in keys:
                        job.settle(key)
                    return
                retry: list[tuple[str, BaseException]] = []
                for r in response.results:
                    if r.feature not in wanted:
                        continue
                    if not r.error_code:
                        job.settle(r.feature)
                        continue
                    error = broker_error(
                        self.client,
                        r.error_code,
                        r.error_message,
                        f"UpdateFeatures, feature {r.feature!r}",
                        node_id=node,
                    )
                    if r.error_code in CONTROLLER_RETRY:
                        retry.append((r.feature, error))
                    else:
                        job.settle(r.feature, error=error)
                self._controller_retry(job, retry, send, t2)

            self._send(
                job,
                keys,
                m.UpdateFeaturesRequest(),
                answer,
                send,
                now=t,
                target=Controller(),
                build=build,
            )

        send(list(wanted), now)
        return self._started(job, now)


def _update_request(
    kind: str,
    version: int,
    keys: list[str],
    wanted: Mapping[str, FeatureUpdate],
    validate_only: bool,
    timeout_ms: int,
) -> m.UpdateFeaturesRequest:
    """UpdateFeatures at ``version``: v0 has a downgrade flag, v1+ the upgrade type."""
    items = []
    for name in keys:
        update = wanted[name]
        item = FeatureUpdateKey(feature=name, max_version_level=update.max_version_level)
        if version >= _UPGRADE_TYPE_VERSION:
            item.upgrade_type = int(update.upgrade_type)
        elif update.upgrade_type is FeatureUpgradeType.UNSAFE_DOWNGRADE:
            raise NoCommonVersionError(
                f"{kind}: UNSAFE_DOWNGRADE needs UpdateFeatures v{_UPGRADE_TYPE_VERSION}+ "
                f"(KIP-778); the controller offers v{version}"
            )
        else:
            item.allow_downgrade = update.upgrade_type is FeatureUpgradeType.SAFE_DOWNGRADE
        items.append(item)
    if validate_only and version < _UPGRADE_TYPE_VERSION:
        raise NoCommonVersionError(
            f"{kind}: validate_only needs UpdateFeatures v{_UPGRADE_TYPE_VERSION}+; "
            f"the controller offers v{version}"
        )
    request = m.UpdateFeaturesRequest(timeout_ms=timeout_ms, feature_updates=items)
    if version >= _UPGRADE_TYPE_VERSION:
        request.validate_only = validate_only
    return request
