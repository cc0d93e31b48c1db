"""The admin surface's topic, cluster and config calls.

See :mod:`kafkacore.transports._admin_common` for how a call is planned.

Each method builds the :class:`~kafkacore.transports._admin_common.Plan` of one user
call; the idioms make them blocking or awaitable methods of the same name
without the underscore. Where kafka-python's ``KafkaAdminClient`` has the
same call, its argument names and order are kept (``timeout_ms`` included)
and its unsupported arguments are refused by name.
"""

from __future__ import annotations

import uuid
from collections.abc import Generator, Iterable, Mapping
from typing import Any

from kafkacore.admin import (
    AlterConfigOp,
    ClusterDescription,
    ConfigEntry,
    CreatedTopic,
    ItemResult,
    ItemResults,
    NewPartitions,
    NewTopic,
    TopicDescription,
    TopicListing,
)
from kafkacore.admin import ConfigResource as CoreConfigResource

from ._admin_common import AdminSurface, Command, ConfigResource, Plan, names

__all__ = ["TopicPlans"]

ConfigValues = dict[str, ConfigEntry]


class TopicPlans(AdminSurface):
    """Topics, partitions, the cluster and configs."""

    # -- topics ------------------------------------------------------------------------
    def _create_topics(
        self,
        new_topics: Iterable[NewTopic],
        timeout_ms: int | None = None,
        validate_only: bool = False,
        *,
        timeout: float | None = None,
    ) -> Plan[ItemResults[str, CreatedTopic]]:
        """Create topics (CreateTopics, to the controller); kafka-python's ``create_topics``.

        ``new_topics``: :class:`NewTopic` items (kafka-python's ``topic_configs=``
        or the core's ``configs=``). With ``validate_only`` the broker only
        checks. Returns each topic's :class:`~kafkacore.admin.CreatedTopic`
        or its own error (e.g. ``TopicAlreadyExistsError``), as ``ItemResults``.
        """
        seconds = self._seconds("create_topics", timeout, timeout_ms)
        return self._one(
            "create_topics",
            seconds,
            lambda core, now, ms: core.create_topics(
                new_topics, validate_only=validate_only, timeout_ms=ms, now=now
            ),
        )

    def _delete_topics(
        self,
        topics: Iterable[str | uuid.UUID],
        timeout_ms: int | None = None,
        *,
        timeout: float | None = None,
    ) -> Plan[ItemResults[str | uuid.UUID, None]]:
        """Delete topics by name or topic id (DeleteTopics); kafka-python's ``delete_topics``.

        Returns ``ItemResults`` (``None`` or each topic's error).
        """
        seconds = self._seconds("delete_topics", timeout, timeout_ms)
        return self._one(
            "delete_topics",
            seconds,
            lambda core, now, ms: core.delete_topics(names(topics), timeout_ms=ms, now=now),
        )

    def _create_partitions(
        self,
        topic_partitions: Mapping[str, NewPartitions],
        timeout_ms: int | None = None,
        validate_only: bool = False,
        *,
        timeout: float | None = None,
    ) -> Plan[ItemResults[str, None]]:
        """Grow topics to ``{topic: NewPartitions(total_count)}`` partitions (CreatePartitions);
        kafka-python's ``create_partitions``. Returns ``ItemResults`` per topic."""
        seconds = self._seconds("create_partitions", timeout, timeout_ms)
        return self._one(
            "create_partitions",
            seconds,
            lambda core, now, ms: core.create_partitions(
                topic_partitions, validate_only=validate_only, timeout_ms=ms, now=now
            ),
        )

    def _list_topics(
        self, include_internal: bool = False, *, timeout: float | None = None
    ) -> Plan[list[str]]:
        """The topic names, sorted (Metadata); kafka-python's ``list_topics``, Java's
        ``listTopics().names()``. ``list_topic_listings`` gives ids and flags too."""

        def steps() -> Generator[Command, Any, list[str]]:
            listed: dict[str, TopicListing] = yield lambda core, now, ms: core.list_topics(
                include_internal=include_internal, timeout_ms=ms, now=now
            )
            return sorted(listed)

        return self._plan("list_topics", timeout, steps())

    def _list_topic_listings(
        self, include_internal: bool = False, *, timeout: float | None = None
    ) -> Plan[dict[str, TopicListing]]:
        """Every topic's :class:`~kafkacore.admin.TopicListing` (name, topic id, internal),
        by name: the core's ``list_topics``, Java's ``listTopics().namesToListings()``."""
        return self._one(
            "list_topic_listings",
            timeout,
            lambda core, now, ms: core.list_topics(
                include_internal=include_internal, timeout_ms=ms, now=now
            ),
        )

    def _describe_topics(
        self,
        topics: Iterable[str] | None = None,
        include_authorized_operations: bool = False,
        *,
        timeout: float | None = None,
    ) -> Plan[ItemResults[str, TopicDescription]]:
        """Describe topics (Metadata): partitions, leaders, replicas, topic ids.

        kafka-python's ``describe_topics``: ``topics=None`` describes every
        (non-internal) topic, a lone name that one. Returns ``ItemResults`` of
        :class:`~kafkacore.admin.TopicDescription`.
        """

        def steps() -> Generator[Command, Any, ItemResults[str, TopicDescription]]:
            wanted = topics
            if wanted is None:
                listed: dict[str, TopicListing] = yield lambda core, now, ms: core.list_topics(
                    timeout_ms=ms, now=now
                )
                wanted = sorted(listed)
                if not wanted:
                    return ItemResults({})
            asked = names(wanted)
            described: ItemResults[str, TopicDescription] = yield (
                lambda core, now, ms: core.describe_topics(
                    asked,
                    include_authorized_operations=include_authorized_operations,
                    timeout_ms=ms,
                    now=now,
                )
            )
            return described

        return self._plan("describe_topics", timeout, steps())

    def _describe_cluster(
        self,
        include_authorized_operations: bool = False,
        include_fenced_brokers: bool = False,
        *,
        timeout: float | None = None,
    ) -> Plan[ClusterDescription]:
        """The cluster id, the controller and the brokers (DescribeCluster);
        kafka-python's ``describe_cluster``, as a :class:`~kafkacore.admin.ClusterDescription`."""
        return self._one(
            "describe_cluster",
            timeout,
            lambda core, now, ms: core.describe_cluster(
                include_authorized_operations=include_authorized_operations,
                include_fenced_brokers=include_fenced_brokers,
                timeout_ms=ms,
                now=now,
            ),
        )

    # -- configs -----------------------------------------------------------------------
    def _describe_configs(
        self,
        config_resources: Iterable[CoreConfigResource],
        include_synonyms: bool = False,
        *,
        include_documentation: bool = False,
        timeout: float | None = None,
    ) -> Plan[ItemResults[CoreConfigResource, ConfigValues]]:
        """Every config of each resource, by name (DescribeConfigs); kafka-python's
        ``describe_configs``.

        A kafka-python :class:`ConfigResource` with ``configs`` reports only
        the configs it names. Returns ``ItemResults`` of ``{name: ConfigEntry}``
        per resource (look them up with either kind of ``ConfigResource``).
        """
        what = f"{self._NAME}.describe_configs"
        wanted = _resources(what, config_resources)

        def steps() -> Generator[Command, Any, ItemResults[CoreConfigResource, ConfigValues]]:
            found: ItemResults[CoreConfigResource, ConfigValues] = yield (
                lambda core, now, ms: core.describe_configs(
                    list(wanted),
                    include_synonyms=include_synonyms,
                    include_documentation=include_documentation,
                    timeout_ms=ms,
                    now=now,
                )
            )
            return _only_named(found, wanted)

        return self._plan("describe_configs", timeout, steps())

    def _incremental_alter_configs(
        self,
        changes: Mapping[CoreConfigResource, Iterable[AlterConfigOp]],
        *,
        validate_only: bool = False,
        timeout: float | None = None,
    ) -> Plan[ItemResults[CoreConfigResource, None]]:
        """Set, delete, append or subtract single configs (IncrementalAlterConfigs):
        ``{resource: [AlterConfigOp(name, value, op)]}``. Returns ``ItemResults``."""
        return self._one(
            "incremental_alter_configs",
            timeout,
            lambda core, now, ms: core.incremental_alter_configs(
                changes, validate_only=validate_only, timeout_ms=ms, now=now
            ),
        )

    def _alter_configs(
        self,
        config_resources: Mapping[CoreConfigResource, Mapping[str, str]] | Iterable[ConfigResource],
        *,
        validate_only: bool = False,
        timeout: float | None = None,
    ) -> Plan[ItemResults[CoreConfigResource, None]]:
        """Replace every dynamic config of each resource (AlterConfigs; configs not named
        go back to their defaults; prefer ``incremental_alter_configs``).

        Takes the core's ``{resource: {name: value}}`` or kafka-python's list of
        ``ConfigResource(type, name, configs={...})``. Returns ``ItemResults``.
        """
        configs = _alter_shape(f"{self._NAME}.alter_configs", config_resources)
        return self._one(
            "alter_configs",
            timeout,
            lambda core, now, ms: core.alter_configs(
                configs, validate_only=validate_only, timeout_ms=ms, now=now
            ),
        )


def _resources(what: str, value: object) -> dict[CoreConfigResource, frozenset[str] | None]:
    """The core resources asked about, each with the config names kept (None: all)."""
    if isinstance(value, CoreConfigResource | str) or not isinstance(value, Iterable):
        raise TypeError(f"{what}: expected a collection of ConfigResource, got {value!r}")
    out: dict[CoreConfigResource, frozenset[str] | None] = {}
    for resource in value:
        if not isinstance(resource, CoreConfigResource):
            raise TypeError(f"{what}: expected ConfigResource items, got {resource!r}")
        names = getattr(resource, "configs", None)
        core = resource.core() if isinstance(resource, ConfigResource) else resource
        out[core] = frozenset(names) if names else None
    return out


def _only_named(
    found: ItemResults[CoreConfigResource, ConfigValues],
    wanted: Mapping[CoreConfigResource, frozenset[str] | None],
) -> ItemResults[CoreConfigResource, ConfigValues]:
    if all(names is None for names in wanted.values()):
        return found
    kept: dict[CoreConfigResource, ItemResult[ConfigValues]] = {}
    for resource, item in found.items():
        names = wanted.get(resource)
        if names is None or item.value is None:
            kept[resource] = item
        else:
            kept[resource] = ItemResult({k: v for k, v in item.value.items() if k in names})
    return ItemResults(kept)


def _alter_shape(what: str, value: object) -> Mapping[Any, Any]:
    """The core's mapping, from itself or from kafka-python's resources with ``configs``."""
    if isinstance(value, Mapping):
        return {
            r.core() if isinstance(r, ConfigResource) else r: configs
            for r, configs in value.items()
        }
    if isinstance(value, CoreConfigResource | str) or not isinstance(value, Iterable):
        raise TypeError(
            f"{what}: expected {{ConfigResource: {{name: value}}}} or a list of "
            f"ConfigResource(type, name, configs={{...}}), got {value!r}"
        )
    out: dict[CoreConfigResource, Mapping[str, str]] = {}
    for resource in value:
        if not isinstance(resource, ConfigResource) or resource.configs is None:
            raise TypeError(
                f"{what}: {resource!r} says no configs to set; give "
                "ConfigResource(type, name, configs={name: value}) items, or a mapping "
                "{ConfigResource: {name: value}}"
            )
        out[resource.core()] = resource.configs
    return out
