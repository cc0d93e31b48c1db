"""kafka-python 3's config and cluster calls, over kafkacore's typed ones."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from kafkacore.admin import (
    AlterConfigOp as CoreAlterConfigOp,
)
from kafkacore.admin import (
    AlterConfigOpType,
    ConfigEntry,
    ConfigResourceType,
    FeatureUpdate,
    FeatureUpgradeType,
    ItemResults,
    TopicPartitionReplica,
)
from kafkacore.admin import ConfigResource as CoreConfigResource
from kafkacore.errors import NoCommonVersionError

from ._base import AdminBase, seconds
from ._shapes import (
    ErrorClass,
    cluster_dict,
    config_dict,
    error_class,
    keep_config,
    log_dirs_dict,
    quorum_dict,
)
from ._types import ConfigFilterType, ConfigResource, UpdateFeatureType, member

__all__ = ["ConfigCalls"]

ConfigsByType = dict[str, dict[str, Any]]


class ConfigCalls(AdminBase):
    """Configs, the cluster, log directories, the quorum and feature levels."""

    # -- configs ------------------------------------------------------------------------
    def describe_configs(
        self,
        config_resources: Iterable[ConfigResource],
        include_synonyms: bool = False,
        config_filter: ConfigFilterType | str = "modified",
    ) -> ConfigsByType:
        """``{resource_type: {resource_name: {config: {value, config_source, ...}}}}``:
        each resource's configs that ``config_filter`` keeps (``'modified'``: those
        set for it; ``'dynamic'``, ``'default'``, ``'static'``, ``'all'``); the keys of
        a resource's ``configs`` narrow them further. A resource the broker could not
        describe has no configs (kafka-python's behaviour)."""
        kind = member(ConfigFilterType, config_filter, "describe_configs: config_filter")
        wanted = [(r, r.core()) for r in config_resources]
        found = self._admin.describe_configs([core for _, core in wanted], include_synonyms)
        out: ConfigsByType = {}
        for resource, core in wanted:
            item = found[core]
            names = _names(resource.configs)
            configs = {
                name: config_dict(entry)
                for name, entry in (item.value or {}).items()
                if keep_config(entry, kind) and (names is None or name in names)
            }
            out.setdefault(core.type.name.lower(), {})[core.name] = configs
        return out

    def list_config_resources(
        self, resource_types: Iterable[ConfigResourceType | str] | None = None
    ) -> dict[str, list[str]]:
        """``{resource_type: [names]}`` of the resources the cluster knows (Kafka 4.1+
        for types other than client metrics)."""
        types = None
        if resource_types:
            types = [
                member(ConfigResourceType, t, "list_config_resources: resource_types")
                for t in resource_types
            ]
        out: dict[str, list[str]] = {}
        for r in self._admin.list_config_resources(types):
            out.setdefault(r.type.name.lower(), []).append(r.name)
        return out

    def alter_configs(
        self,
        config_resources: Iterable[ConfigResource],
        validate_only: bool = False,
        raise_on_unknown: bool = True,
        incremental: bool | None = None,
    ) -> ConfigsByType:
        """Set configs, ``{key: value}`` or ``{key: (op, value)}`` per resource
        (IncrementalAlterConfigs unless ``incremental=False``, which replaces every
        dynamic config and so first adds the modified ones not named);
        ``{resource_type: {name: 'OK' or the error}}``."""
        resources = self._checked(config_resources, raise_on_unknown)
        if incremental is False:
            changes = {r.core(): _set_only(r.configs) for r in resources}
            modified = self._modified(list(changes))
            legacy = {core: {**modified[core], **values} for core, values in changes.items()}
            return _outcome(self._admin.alter_configs(legacy, validate_only=validate_only))
        ops = {r.core(): _ops(r.configs) for r in resources}
        return self._incremental(ops, validate_only)

    def reset_configs(
        self,
        config_resources: Iterable[ConfigResource],
        validate_only: bool = False,
        raise_on_unknown: bool = True,
        incremental: bool | None = None,
    ) -> ConfigsByType:
        """Reset the named configs of each resource (all its modified ones when it
        names none) to their defaults; ``{resource_type: {name: 'OK' or the error}}``."""
        resources = self._checked(config_resources, raise_on_unknown)
        modified = self._modified([r.core() for r in resources])
        if incremental is False:
            legacy = {
                r.core(): {
                    k: v for k, v in modified[r.core()].items() if r.configs and k not in r.configs
                }
                for r in resources
            }
            return _outcome(self._admin.alter_configs(legacy, validate_only=validate_only))
        ops = {
            r.core(): [
                CoreAlterConfigOp(k, None, AlterConfigOpType.DELETE)
                for k in (r.configs or modified[r.core()])
            ]
            for r in resources
        }
        return self._incremental(ops, validate_only)

    def _incremental(
        self, ops: dict[CoreConfigResource, list[CoreAlterConfigOp]], validate_only: bool
    ) -> ConfigsByType:
        # kafkacore refuses a resource with nothing to change; there is nothing to do.
        todo = {r: changes for r, changes in ops.items() if changes}
        out = (
            _outcome(self._admin.incremental_alter_configs(todo, validate_only=validate_only))
            if todo
            else {}
        )
        for r in ops:
            out.setdefault(r.type.name.lower(), {}).setdefault(r.name, "OK")
        return out

    def _describe(
        self, resources: list[CoreConfigResource]
    ) -> ItemResults[Any, dict[str, ConfigEntry]]:
        return self._admin.describe_configs(resources)

    def _modified(
        self, resources: list[CoreConfigResource]
    ) -> dict[CoreConfigResource, dict[str, str]]:
        """Each resource's modified configs with a value (what AlterConfigs must resend)."""
        found = self._describe(resources)
        return {
            r: {
                name: e.value
                for name, e in found[r].result().items()
                if e.value is not None and keep_config(e, ConfigFilterType.MODIFIED)
            }
            for r in resources
        }

    def _checked(self, resources: Iterable[ConfigResource], check: bool) -> list[ConfigResource]:
        """The resources; with ``check`` (``raise_on_unknown``), each config they name
        must be one of the resource's dynamic configs (a ValueError otherwise)."""
        listed = list(resources)
        if not check:
            return listed
        found = self._describe([r.core() for r in listed])
        for r in listed:
            dynamic = {
                name
                for name, e in found[r.core()].result().items()
                if keep_config(e, ConfigFilterType.DYNAMIC)
            }
            unknown = set(_names(r.configs) or ()) - dynamic
            if unknown:
                raise ValueError(f"Unrecognized configs: {unknown}")
        return listed

    # -- the cluster ----------------------------------------------------------------------
    def describe_cluster(self) -> dict[str, Any]:
        """Cluster id, controller id and brokers (fenced ones included, KIP-1073)."""
        try:
            cluster = self._admin.describe_cluster(
                include_authorized_operations=True, include_fenced_brokers=True
            )
        except NoCommonVersionError:  # a broker before DescribeCluster v2 (Kafka 3.7)
            cluster = self._admin.describe_cluster(include_authorized_operations=True)
        return cluster_dict(cluster)

    def describe_log_dirs(
        self,
        topic_partitions: Mapping[str, Iterable[int]] | Iterable[str] | None = None,
        brokers: Iterable[int] | None = None,
    ) -> list[dict[str, Any]]:
        """Each broker's log directories (``brokers`` None: every broker), with the
        replicas of ``topic_partitions`` (``{topic: [ids]}``, topics, None: all)."""
        wanted: dict[str, set[int] | None] | None = None
        if isinstance(topic_partitions, Mapping):
            wanted = {t: set(ids) for t, ids in topic_partitions.items()}
        elif topic_partitions is not None:
            wanted = {t: None for t in topic_partitions}
        found = self._admin.describe_log_dirs(None if brokers is None else list(brokers))
        return [log_dirs_dict(broker, item.result(), wanted) for broker, item in found.items()]

    def alter_replica_log_dirs(
        self, replica_assignments: Mapping[Any, str]
    ) -> dict[TopicPartitionReplica, ErrorClass]:
        """Move replicas (``TopicPartitionReplica`` or ``(topic, partition, broker_id)``)
        into log directories; each replica's error class (``NoError`` on success)."""
        if not replica_assignments:
            return {}
        moves = {TopicPartitionReplica(*key): path for key, path in replica_assignments.items()}
        moved = self._admin.alter_replica_log_dirs(moves)
        return {key: error_class(item.error) for key, item in moved.items()}

    def describe_metadata_quorum(self) -> dict[str, Any]:
        """The KRaft quorum of ``__cluster_metadata`` (DescribeQuorum's shape)."""
        return quorum_dict(self._admin.describe_metadata_quorum())

    # -- feature levels ------------------------------------------------------------------
    def describe_features(self, send_request_to_controller: bool = False) -> dict[str, Any]:
        """``{feature: {'supported': (min, max), 'finalized': (min, max),
        'finalized_epoch': epoch}}`` as a broker reports them."""
        if send_request_to_controller:
            raise ValueError(
                "describe_features: send_request_to_controller=True is not supported "
                "(kafkacore asks any broker); leave it out"
            )
        meta = self._admin.describe_features()
        out: dict[str, dict[str, Any]] = {}
        for name, s in meta.supported_features.items():
            out.setdefault(name, {})["supported"] = (s.min_version, s.max_version)
        for name, f in meta.finalized_features.items():
            entry = out.setdefault(name, {})
            entry["finalized"] = (f.min_version_level, f.max_version_level)
            entry["finalized_epoch"] = meta.finalized_features_epoch
        return out

    def update_features(
        self,
        feature_updates: Mapping[str, Any],
        validate_only: bool = False,
        timeout_ms: int = 60000,
    ) -> dict[str, str]:
        """Move finalized levels, ``{feature: level}`` or ``{feature: (upgrade_type,
        level)}``; ``{feature: 'OK' or the error}``."""
        updates = {}
        for name, spec in feature_updates.items():
            kind, level = spec if isinstance(spec, tuple) else (UpdateFeatureType.UPGRADE, spec)
            how = member(UpdateFeatureType, kind, f"update_features[{name!r}]")
            updates[name] = FeatureUpdate(int(level), FeatureUpgradeType(int(how)))
        done = self._admin.update_features(
            updates, validate_only=validate_only, timeout=seconds(timeout_ms, "update_features")
        )
        return {name: "OK" if item.ok else str(item.error) for name, item in done.items()}


def _names(configs: Any) -> set[str] | None:
    """The config names a resource's ``configs`` selects (None: all)."""
    if configs is None:
        return None
    return set(configs)


def _ops(configs: Any) -> list[CoreAlterConfigOp]:
    if not configs:
        return []
    if not isinstance(configs, Mapping):
        raise TypeError(
            "alter_configs requires configs as a dict of {key: (op, value)} or {key: value} "
            "(interpreted as SET)"
        )
    out = []
    for name, spec in configs.items():
        op, value = spec if isinstance(spec, tuple) else (AlterConfigOpType.SET, spec)
        kind = member(AlterConfigOpType, op, f"alter_configs[{name!r}]")
        out.append(
            CoreAlterConfigOp(name, None if kind is AlterConfigOpType.DELETE else value, kind)
        )
    return out


def _set_only(configs: Any) -> dict[str, str]:
    out = {}
    for op in _ops(configs):
        if op.op is not AlterConfigOpType.SET:
            raise ValueError(
                f"Non-incremental AlterConfigsRequest does not support operation {op.op.name} "
                "(SET only)"
            )
        out[op.name] = op.value or ""
    return out


def _outcome(results: ItemResults[CoreConfigResource, None]) -> ConfigsByType:
    out: ConfigsByType = {}
    for r, item in results.items():
        out.setdefault(r.type.name.lower(), {})[r.name] = "OK" if item.ok else str(item.error)
    return out
