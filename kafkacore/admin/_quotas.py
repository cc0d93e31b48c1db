"""Client quotas (KIP-546) and SCRAM credentials (KIP-554), on any broker
(in KRaft the broker forwards the changes to the controller, KIP-590)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from kafkacore.admin._base import AdminBase, code_error, items_outcome, single_outcome
from kafkacore.admin._checks import check_bool, check_mapping, check_names, check_timeout
from kafkacore.admin._routing import SEARCH, found_outcome
from kafkacore.admin.quota_types import (
    ClientQuotaEntity,
    ClientQuotaFilter,
    ScramCredentialDeletion,
    ScramCredentialInfo,
    ScramCredentialUpsertion,
    ScramMechanism,
)
from kafkacore.admin.results import ItemResults
from kafkacore.client.handles import RequestHandle
from kafkacore.client.routing import AnyNode
from kafkacore.operation import Operation
from kafkacore.protocol import messages as m
from kafkacore.protocol.messages import alter_client_quotas_request as acq
from kafkacore.protocol.messages import alter_user_scram_credentials_request as aus
from kafkacore.protocol.messages.describe_client_quotas_request import ComponentData
from kafkacore.protocol.messages.describe_user_scram_credentials_request import UserName

__all__ = ["QuotaCommands"]


def _entity(parts: Iterable[Any]) -> ClientQuotaEntity:
    return ClientQuotaEntity(tuple(sorted((p.entity_type, p.entity_name) for p in parts)))


def _mechanism(value: int) -> ScramMechanism:
    return (
        ScramMechanism(value)
        if value in ScramMechanism._value2member_map_
        else ScramMechanism.UNKNOWN
    )


class QuotaCommands(AdminBase):
    """Quota and SCRAM commands of :class:`~kafkacore.admin.AdminCore`."""

    # ------------------------------------------------------------ quotas
    def describe_client_quotas(
        self,
        components: Iterable[ClientQuotaFilter] = (),
        *,
        strict: bool = False,
        timeout_ms: int | None = None,
        now: float,
    ) -> Operation[dict[ClientQuotaEntity, dict[str, float]]]:
        """The quotas of the entities the filter matches (no components: all);
        ``strict`` leaves out entities with types the filter does not name."""
        kind = "describe_client_quotas"
        parts = list(components)
        for c in parts:
            if not isinstance(c, ClientQuotaFilter):
                raise TypeError(f"{kind}: expected ClientQuotaFilter items, got {c!r}")
        check_bool(f"{kind}: strict", strict)
        job = self._begin(kind, [None], single_outcome, check_timeout(kind, timeout_ms), now)
        request = m.DescribeClientQuotasRequest(
            components=[
                ComponentData(entity_type=c.entity_type, match_type=c.match_type, match=c.match)
                for c in parts
            ],
            strict=strict,
        )

        def send(keys: list[Any], t: float) -> None:
            self._send(job, keys, request, answer, send, now=t, target=AnyNode())

        def answer(
            response: m.DescribeClientQuotasResponse,
            handle: RequestHandle[m.DescribeClientQuotasResponse],
            t: float,
        ) -> None:
            if response.error_code:
                error = code_error(
                    response.error_code,
                    response.error_message,
                    "DescribeClientQuotas",
                    node_id=self._answerer(),
                )
                self._failed(job, [None], error, send, t)
                return
            found = {
                _entity(e.entity): {v.key: v.value for v in e.values}
                for e in response.entries or ()
            }
            job.settle(None, found)

        send([None], now)
        return self._started(job, now)

    def alter_client_quotas(
        self,
        alterations: Mapping[ClientQuotaEntity, Mapping[str, float | None]],
        *,
        validate_only: bool = False,
        timeout_ms: int | None = None,
        now: float,
    ) -> Operation[ItemResults[ClientQuotaEntity, None]]:
        """Set quotas (``{"producer_byte_rate": 1024.0}``) or remove them (None)."""
        kind = "alter_client_quotas"
        wanted: dict[ClientQuotaEntity, dict[str, float | None]] = {}
        for entity, ops in check_mapping(f"{kind}: alterations", alterations).items():
            if not isinstance(entity, ClientQuotaEntity):
                raise TypeError(f"{kind}: expected ClientQuotaEntity keys, got {entity!r}")
            values = dict(check_mapping(f"{kind}[{entity}]", ops))
            for key, value in values.items():
                if value is not None and (
                    isinstance(value, bool) or not isinstance(value, int | float)
                ):
                    raise TypeError(
                        f"{kind}[{entity}][{key!r}]: expected a number or None, got {value!r}"
                    )
            if not values:
                raise ValueError(f"{kind}[{entity}]: name at least one quota")
            wanted[entity] = values
        if not wanted:
            raise ValueError(f"{kind}: name at least one ClientQuotaEntity")
        check_bool(f"{kind}: validate_only", validate_only)
        job = self._begin(kind, list(wanted), items_outcome, check_timeout(kind, timeout_ms), now)

        def send(keys: list[ClientQuotaEntity], t: float) -> None:
            entries = [
                acq.EntryData(
                    entity=[acq.EntityData(entity_type=k, entity_name=v) for k, v in e.parts],
                    ops=[
                        acq.OpData(key=k, value=float(v or 0.0), remove=v is None)
                        for k, v in wanted[e].items()
                    ],
                )
                for e in keys
            ]
            self._send(
                job,
                keys,
                m.AlterClientQuotasRequest(entries=entries, validate_only=validate_only),
                answer,
                send,
                now=t,
                target=AnyNode(),
            )

        def answer(
            response: m.AlterClientQuotasResponse,
            handle: RequestHandle[m.AlterClientQuotasResponse],
            t: float,
        ) -> None:
            for e in response.entries:
                entity = _entity(e.entity)
                if entity in wanted:
                    error = (
                        code_error(
                            e.error_code,
                            e.error_message,
                            f"quota entity {entity.as_dict()}",
                            node_id=self._answerer(),
                        )
                        if e.error_code
                        else None
                    )
                    job.settle(entity, None, error)

        send(list(wanted), now)
        return self._started(job, now)

    # -------------------------------------------------------------- SCRAM
    def describe_user_scram_credentials(
        self, users: Iterable[str] | None = None, *, timeout_ms: int | None = None, now: float
    ) -> Operation[ItemResults[str, tuple[ScramCredentialInfo, ...]]]:
        """Each user's SCRAM mechanisms and iterations (None: every user that has one)."""
        kind = "describe_user_scram_credentials"
        names = None if users is None else check_names(f"{kind}: users", users)
        keys: list[Any] = [SEARCH] if names is None else list(names)
        job = self._begin(
            kind,
            keys,
            found_outcome if names is None else items_outcome,
            check_timeout(kind, timeout_ms),
            now,
        )
        request = m.DescribeUserScramCredentialsRequest(
            users=None if names is None else [UserName(name=u) for u in names]
        )

        def send(todo: list[Any], t: float) -> None:
            self._send(job, todo, request, answer, send, now=t, target=AnyNode())

        def answer(
            response: m.DescribeUserScramCredentialsResponse,
            handle: RequestHandle[m.DescribeUserScramCredentialsResponse],
            t: float,
        ) -> None:
            if response.error_code:
                error = code_error(
                    response.error_code,
                    response.error_message,
                    "DescribeUserScramCredentials",
                    node_id=self._answerer(),
                )
                self._failed(job, job.unsettled(), error, send, t)
                return
            for r in response.results:
                if names is None:
                    job.add([r.user])
                if r.error_code:
                    job.settle(
                        r.user,
                        error=code_error(
                            r.error_code,
                            r.error_message,
                            f"user {r.user!r}",
                            node_id=self._answerer(),
                        ),
                    )
                else:
                    infos = tuple(
                        ScramCredentialInfo(
                            mechanism=_mechanism(c.mechanism), iterations=c.iterations
                        )
                        for c in r.credential_infos
                    )
                    job.settle(r.user, infos)
            job.settle(SEARCH, None)

        send(keys, now)
        return self._started(job, now)

    def alter_user_scram_credentials(
        self,
        alterations: Iterable[ScramCredentialUpsertion | ScramCredentialDeletion],
        *,
        timeout_ms: int | None = None,
        now: float,
    ) -> Operation[ItemResults[str, None]]:
        """Set or remove users' SCRAM credentials; one outcome per user."""
        kind = "alter_user_scram_credentials"
        if isinstance(
            alterations, ScramCredentialUpsertion | ScramCredentialDeletion
        ) or not isinstance(alterations, Iterable):
            raise TypeError(f"{kind}: expected a collection of ScramCredentialUpsertion/Deletion")
        items = list(alterations)
        for a in items:
            if not isinstance(a, ScramCredentialUpsertion | ScramCredentialDeletion):
                raise TypeError(
                    f"{kind}: expected ScramCredentialUpsertion or Deletion items, got {a!r}"
                )
        if not items:
            raise ValueError(f"{kind}: give at least one alteration")
        users = list(dict.fromkeys(a.user for a in items))
        job = self._begin(kind, users, items_outcome, check_timeout(kind, timeout_ms), now)
        upserts = [
            aus.ScramCredentialUpsertion(
                name=a.user,
                mechanism=a.mechanism,
                iterations=a.iterations,
                salt=a.salt,
                salted_password=a.salted_password(),
            )
            for a in items
            if isinstance(a, ScramCredentialUpsertion)
        ]
        deletes = [
            aus.ScramCredentialDeletion(name=a.user, mechanism=a.mechanism)
            for a in items
            if isinstance(a, ScramCredentialDeletion)
        ]
        request = m.AlterUserScramCredentialsRequest(deletions=deletes, upsertions=upserts)

        def send(todo: list[str], t: float) -> None:
            self._send(job, todo, request, answer, send, now=t, target=AnyNode())

        def answer(
            response: m.AlterUserScramCredentialsResponse,
            handle: RequestHandle[m.AlterUserScramCredentialsResponse],
            t: float,
        ) -> None:
            for r in response.results:
                if r.user in job.known:
                    error = (
                        code_error(
                            r.error_code,
                            r.error_message,
                            f"user {r.user!r}",
                            node_id=self._answerer(),
                        )
                        if r.error_code
                        else None
                    )
                    job.settle(r.user, None, error)

        send(users, now)
        return self._started(job, now)
