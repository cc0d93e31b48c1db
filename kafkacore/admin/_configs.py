"""Config commands: describe and incrementally alter configs (KIP-133, KIP-339).

Routing: a broker's own resources (``BROKER``/``BROKER_LOGGER`` named by a
broker id) are answered only by that broker, so they go to it, one request
per broker; every other resource (topics, groups, client-metrics
subscriptions, the cluster-wide broker default ``""``) goes to any broker in
one request.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from kafkacore.admin._base import (
    AdminBase,
    Again,
    Job,
    code_error,
    items_outcome,
    single_outcome,
)
from kafkacore.admin._checks import check_bool, check_mapping, check_str, check_timeout
from kafkacore.admin.results import ItemResults
from kafkacore.admin.types import (
    AlterConfigOp,
    ConfigEntry,
    ConfigResource,
    ConfigResourceType,
    ConfigSource,
    ConfigSynonym,
    ConfigType,
)
from kafkacore.client.handles import RequestHandle
from kafkacore.client.routing import AnyNode, Node, Target
from kafkacore.errors import NoCommonVersionError
from kafkacore.operation import Operation
from kafkacore.protocol import messages as m
from kafkacore.protocol.messages.alter_configs_request import AlterableConfig as LegacyConfig
from kafkacore.protocol.messages.alter_configs_request import AlterConfigsResource as LegacyResource
from kafkacore.protocol.messages.describe_configs_request import DescribeConfigsResource
from kafkacore.protocol.messages.incremental_alter_configs_request import (
    AlterableConfig,
    AlterConfigsResource,
)

__all__ = ["ConfigCommands"]

#: DescribeConfigs v3 added each config's type and documentation (KIP-569).
_DOCUMENTATION_VERSION = 3
#: ListConfigResources v1 lists every resource type; v0 was ListClientMetricsResources.
_TYPES_VERSION = 1


class ConfigCommands(AdminBase):
    """Config commands of :class:`~kafkacore.admin.AdminCore`."""

    def describe_configs(
        self,
        resources: Iterable[ConfigResource],
        *,
        include_synonyms: bool = False,
        include_documentation: bool = False,
        timeout_ms: int | None = None,
        now: float,
    ) -> Operation[ItemResults[ConfigResource, dict[str, ConfigEntry]]]:
        """Every config of each resource, by name (documentation needs DescribeConfigs v3+)."""
        keys = _resources("describe_configs", resources)
        check_bool("describe_configs: include_synonyms", include_synonyms)
        check_bool("describe_configs: include_documentation", include_documentation)
        job = self._begin(
            "describe_configs",
            keys,
            items_outcome,
            check_timeout("describe_configs", timeout_ms),
            now,
        )

        def send(todo: list[ConfigResource], t: float) -> None:
            for target, batch in _by_target(todo).items():
                self._describe(job, target, batch, include_synonyms, include_documentation, send, t)

        send(keys, now)
        return self._started(job, now)

    def _describe(
        self,
        job: Job,
        target: Target,
        batch: list[ConfigResource],
        synonyms: bool,
        documentation: bool,
        send: Again,
        now: float,
    ) -> None:
        def build(version: int) -> m.DescribeConfigsRequest:
            request = m.DescribeConfigsRequest(
                resources=[
                    DescribeConfigsResource(
                        resource_type=r.type, resource_name=r.name, configuration_keys=None
                    )
                    for r in batch
                ],
                include_synonyms=synonyms,
            )
            if documentation and version >= _DOCUMENTATION_VERSION:
                request.include_documentation = True
            return request

        def answer(
            response: m.DescribeConfigsResponse,
            handle: RequestHandle[m.DescribeConfigsResponse],
            t: float,
        ) -> None:
            for r in response.results:
                key = _key(r.resource_type, r.resource_name)
                if key in batch:
                    job.settle(
                        key,
                        *_outcome(
                            key, r.error_code, r.error_message, r.configs, node_id=self._answerer()
                        ),
                    )

        self._send(
            job,
            batch,
            m.DescribeConfigsRequest(),
            answer,
            send,
            now=now,
            target=target,
            build=build,
        )

    def incremental_alter_configs(
        self,
        changes: Mapping[ConfigResource, Iterable[AlterConfigOp]],
        *,
        validate_only: bool = False,
        timeout_ms: int | None = None,
        now: float,
    ) -> Operation[ItemResults[ConfigResource, None]]:
        """Set, delete, append to or subtract from configs (IncrementalAlterConfigs)."""
        wanted = _changes(changes)
        check_bool("incremental_alter_configs: validate_only", validate_only)
        job = self._begin(
            "incremental_alter_configs",
            list(wanted),
            items_outcome,
            check_timeout("incremental_alter_configs", timeout_ms),
            now,
        )

        def send(todo: list[ConfigResource], t: float) -> None:
            for target, batch in _by_target(todo).items():
                request = m.IncrementalAlterConfigsRequest(
                    resources=[
                        AlterConfigsResource(
                            resource_type=r.type,
                            resource_name=r.name,
                            configs=[
                                AlterableConfig(name=c.name, config_operation=c.op, value=c.value)
                                for c in wanted[r]
                            ],
                        )
                        for r in batch
                    ],
                    validate_only=validate_only,
                )
                self._send(job, batch, request, answer, send, now=t, target=target)

        def answer(
            response: m.IncrementalAlterConfigsResponse,
            handle: RequestHandle[m.IncrementalAlterConfigsResponse],
            t: float,
        ) -> None:
            for r in response.responses:
                key = _key(r.resource_type, r.resource_name)
                if key in wanted:
                    job.settle(
                        key,
                        *_outcome(
                            key, r.error_code, r.error_message, None, node_id=self._answerer()
                        ),
                    )

        send(list(wanted), now)
        return self._started(job, now)

    def alter_configs(
        self,
        configs: Mapping[ConfigResource, Mapping[str, str]],
        *,
        validate_only: bool = False,
        timeout_ms: int | None = None,
        now: float,
    ) -> Operation[ItemResults[ConfigResource, None]]:
        """Replace every dynamic config of each resource (AlterConfigs; configs not
        named go back to their defaults). Prefer ``incremental_alter_configs``."""
        kind = "alter_configs"
        wanted: dict[ConfigResource, dict[str, str]] = {}
        for resource, values in check_mapping(f"{kind}: configs", configs).items():
            if not isinstance(resource, ConfigResource):
                raise TypeError(f"{kind}: expected ConfigResource keys, got {resource!r}")
            wanted[resource] = {
                check_str(f"{kind}[{resource}] name", k): check_str(
                    f"{kind}[{resource}][{k!r}]", v, empty=True
                )
                for k, v in check_mapping(f"{kind}[{resource}]", values).items()
            }
        if not wanted:
            raise ValueError(f"{kind}: name at least one ConfigResource")
        check_bool(f"{kind}: validate_only", validate_only)
        job = self._begin(kind, list(wanted), items_outcome, check_timeout(kind, timeout_ms), now)

        def send(todo: list[ConfigResource], t: float) -> None:
            for target, batch in _by_target(todo).items():
                resources = [
                    LegacyResource(
                        resource_type=r.type,
                        resource_name=r.name,
                        configs=[LegacyConfig(name=k, value=v) for k, v in wanted[r].items()],
                    )
                    for r in batch
                ]
                request = m.AlterConfigsRequest(resources=resources, validate_only=validate_only)
                self._send(job, batch, request, answer, send, now=t, target=target)

        def answer(
            response: m.AlterConfigsResponse,
            handle: RequestHandle[m.AlterConfigsResponse],
            t: float,
        ) -> None:
            for r in response.responses:
                key = _key(r.resource_type, r.resource_name)
                if key in wanted:
                    job.settle(
                        key,
                        *_outcome(
                            key, r.error_code, r.error_message, None, node_id=self._answerer()
                        ),
                    )

        send(list(wanted), now)
        return self._started(job, now)

    def list_config_resources(
        self,
        resource_types: Iterable[ConfigResourceType] | None = None,
        *,
        timeout_ms: int | None = None,
        now: float,
    ) -> Operation[tuple[ConfigResource, ...]]:
        """The config resources the cluster knows of ``resource_types`` (None: every
        type; ListConfigResources v1, Kafka 4.1+, KIP-1142). A broker with only v0
        (ListClientMetricsResources, KIP-714) lists client-metrics resources alone,
        so asking it for other types fails with ``NoCommonVersionError``."""
        kind = "list_config_resources"
        # None or empty: every type the broker lists (its own default).
        types = None if resource_types is None else _config_types(kind, resource_types) or None
        job = self._begin(kind, [None], single_outcome, check_timeout(kind, timeout_ms), now)

        def build(version: int) -> m.ListConfigResourcesRequest:
            request = m.ListConfigResourcesRequest()
            if version >= _TYPES_VERSION:
                request.resource_types = [int(t) for t in types or ()]
            elif types is not None and types != [ConfigResourceType.CLIENT_METRICS]:
                raise NoCommonVersionError(
                    f"{kind}: resource types other than CLIENT_METRICS need "
                    f"ListConfigResources v{_TYPES_VERSION}+; the broker offers v{version}"
                )
            return request

        def send(keys: list[Any], t: float) -> None:
            self._send(
                job,
                keys,
                m.ListConfigResourcesRequest(),
                answer,
                send,
                now=t,
                target=AnyNode(),
                build=build,
            )

        def answer(
            response: m.ListConfigResourcesResponse,
            handle: RequestHandle[m.ListConfigResourcesResponse],
            t: float,
        ) -> None:
            if response.error_code:
                error = code_error(response.error_code, None, kind, node_id=self._answerer())
                self._failed(job, [None], error, send, t)
                return
            listed = (_key(r.resource_type, r.resource_name) for r in response.config_resources)
            job.settle(None, tuple(r for r in listed if r is not None))

        send([None], now)
        return self._started(job, now)


def _config_types(what: str, types: object) -> list[ConfigResourceType]:
    if isinstance(types, str) or not isinstance(types, Iterable):
        raise TypeError(
            f"{what}: resource_types: expected a collection of ConfigResourceType, got {types!r}"
        )
    out: list[ConfigResourceType] = []
    for t in types:
        if not isinstance(t, ConfigResourceType) or t is ConfigResourceType.UNKNOWN:
            raise TypeError(f"{what}: resource_types: expected ConfigResourceType items, got {t!r}")
        if t not in out:
            out.append(t)
    return out


def _outcome(
    key: ConfigResource, code: int, message: str | None, configs: Any, *, node_id: int | None
) -> tuple[Any, BaseException | None]:
    """A resource's (value, error) as broker ``node_id`` answered; its errors are final
    (as in the Java client)."""
    if code:
        return None, code_error(code, message, f"config resource {key}", node_id=node_id)
    if configs is None:
        return None, None
    return {c.name: _entry(c) for c in configs}, None


def _resources(what: str, resources: object) -> list[ConfigResource]:
    if isinstance(resources, ConfigResource | str) or not isinstance(resources, Iterable):
        raise TypeError(f"{what}: expected a collection of ConfigResource, got {resources!r}")
    out: list[ConfigResource] = []
    for r in resources:
        if not isinstance(r, ConfigResource):
            raise TypeError(f"{what}: expected ConfigResource items, got {r!r}")
        if r in out:
            raise ValueError(f"{what}: {r} is listed twice")
        out.append(r)
    if not out:
        raise ValueError(f"{what}: name at least one ConfigResource")
    return out


def _changes(changes: object) -> dict[ConfigResource, list[AlterConfigOp]]:
    what = "incremental_alter_configs"
    mapping = check_mapping(f"{what}: changes", changes)
    out: dict[ConfigResource, list[AlterConfigOp]] = {}
    for resource, ops in mapping.items():
        if not isinstance(resource, ConfigResource):
            raise TypeError(f"{what}: expected ConfigResource keys, got {resource!r}")
        if isinstance(ops, AlterConfigOp) or not isinstance(ops, Iterable):
            raise TypeError(f"{what}[{resource}]: expected a collection of AlterConfigOp")
        items = list(ops)
        for op in items:
            if not isinstance(op, AlterConfigOp):
                raise TypeError(f"{what}[{resource}]: expected AlterConfigOp items, got {op!r}")
        names = [op.name for op in items]
        if len(set(names)) != len(names):
            raise ValueError(f"{what}[{resource}]: a config is changed twice in {names}")
        if not items:
            raise ValueError(f"{what}[{resource}]: give at least one AlterConfigOp")
        out[resource] = items
    if not out:
        raise ValueError(f"{what}: name at least one ConfigResource")
    return out


def _by_target(resources: list[ConfigResource]) -> dict[Target, list[ConfigResource]]:
    out: dict[Target, list[ConfigResource]] = {}
    for r in resources:
        broker = r.broker_id
        target: Target = AnyNode() if broker is None else Node(broker)
        out.setdefault(target, []).append(r)
    return out


def _key(resource_type: int, name: str) -> ConfigResource | None:
    """The resource an answer names (None for a type this client does not know)."""
    try:
        return ConfigResource(ConfigResourceType(resource_type), name)
    except (ValueError, TypeError):
        return None


def _entry(c: Any) -> ConfigEntry:
    return ConfigEntry(
        name=c.name,
        value=c.value,
        source=ConfigSource.of(c.config_source),
        is_read_only=c.read_only,
        is_sensitive=c.is_sensitive,
        synonyms=tuple(
            ConfigSynonym(name=s.name, value=s.value, source=ConfigSource.of(s.source))
            for s in c.synonyms
        ),
        type=ConfigType.of(c.config_type),
        documentation=c.documentation or None,
    )
