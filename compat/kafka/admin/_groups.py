"""kafka-python 3's group, committed-offset, ACL, transaction and SCRAM calls,
over kafkacore's typed ones.

``group_coordinator_id`` is taken and not needed: kafkacore finds each
group's coordinator itself (and a wrong id cannot misroute a request).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from kafkacore.admin import AbortTransactionSpec as CoreAbortSpec
from kafkacore.admin import OffsetSpec as CoreOffsetSpec
from kafkacore.admin import (
    ScramCredentialDeletion,
    ScramCredentialUpsertion,
)
from kafkacore.client import TopicPartition
from kafkacore.compat.errors import NoError
from kafkacore.consumer import OffsetAndMetadata
from kafkacore.transports._admin_acls import ACL, ACLFilter, CreatedAcls, DeletedAcls

from ._base import AdminBase, raise_first
from ._shapes import ErrorClass, error_class, group_dict, listing_dict
from ._types import (
    AbortTransactionSpec,
    GroupState,
    GroupType,
    OffsetSpec,
    OffsetTimestamp,
    PartitionProducerState,
    ProducerState,
    TransactionDescription,
    TransactionListing,
    TransactionState,
    UserScramCredentialDeletion,
    UserScramCredentialUpsertion,
    member,
)

__all__ = ["GroupCalls"]

Offsets = dict[TopicPartition, OffsetAndMetadata]


class GroupCalls(AdminBase):
    """Groups and their offsets, ACLs, transactions and SCRAM credentials."""

    # -- groups -----------------------------------------------------------------------
    def describe_groups(
        self,
        group_ids: Iterable[str],
        group_coordinator_id: int | None = None,
        include_authorized_operations: bool = False,
    ) -> dict[str, dict[str, Any]]:
        """``{group_id: {group_state, protocol_type, protocol_data, members, ...,
        error}}``; a group that failed (or does not exist) has its ``error``."""
        found = self._admin.describe_consumer_groups(
            list(group_ids), include_authorized_operations=True
        )
        return {g: group_dict(g, item.value, item.error) for g, item in found.items()}

    def list_groups(
        self,
        broker_ids: Iterable[int] | None = None,
        states_filter: Iterable[GroupState | str] | None = None,
        types_filter: Iterable[GroupType | str] | None = None,
    ) -> list[dict[str, Any]]:
        """Every group (of the brokers ``broker_ids`` coordinate, None: all), optionally
        filtered by state and type: ``[{group_id, protocol_type, group_state,
        group_type}]``. A broker's error raises."""
        states = (
            None
            if not states_filter
            else [member(GroupState, s, "list_groups: states_filter").value for s in states_filter]
        )
        types = (
            None
            if not types_filter
            else [member(GroupType, t, "list_groups: types_filter").value for t in types_filter]
        )
        listed = self._admin.list_groups(states=states, types=types).all()
        only = None if broker_ids is None else set(broker_ids)
        return [listing_dict(g) for g in listed if only is None or g.coordinator in only]

    def list_group_offsets(self, group_specs: Any) -> dict[str, Offsets]:
        """The committed offsets of groups: a group id, a list of them, or ``{group_id:
        [TopicPartition] or None}``; ``{group_id: {tp: OffsetAndMetadata}}`` (-1 for a
        named partition without one). An error raises."""
        if isinstance(group_specs, str):
            group_specs = {group_specs: None}
        elif not isinstance(group_specs, Mapping):
            group_specs = dict.fromkeys(group_specs)
        if not group_specs:
            raise ValueError("Empty group_specs!")
        out: dict[str, Offsets] = {}
        for group, partitions in group_specs.items():
            found = self._admin.list_consumer_group_offsets(group, partitions)
            out[group] = {
                tp: OffsetAndMetadata(-1, "", None) if o is None else o for tp, o in found.items()
            }
        return out

    def delete_groups(
        self, group_ids: Iterable[str], group_coordinator_id: int | None = None
    ) -> dict[str, str]:
        """Delete groups: ``{group_id: 'OK' or the error's class name}``."""
        deleted = self._admin.delete_consumer_groups(list(group_ids))
        return {g: "OK" if item.ok else type(item.error).__name__ for g, item in deleted.items()}

    def alter_group_offsets(
        self,
        group_id: str,
        offsets: Mapping[TopicPartition, OffsetAndMetadata],
        group_coordinator_id: int | None = None,
    ) -> dict[TopicPartition, ErrorClass]:
        """Commit offsets for an inactive group; each partition's error class
        (``NoError`` on success)."""
        if not offsets:
            return {}
        done = self._admin.alter_consumer_group_offsets(group_id, dict(offsets))
        return {tp: error_class(item.error) for tp, item in done.items()}

    def reset_group_offsets(
        self,
        group_id: str,
        offset_specs: Mapping[TopicPartition, Any],
        group_coordinator_id: int | None = None,
    ) -> dict[TopicPartition, dict[str, Any]]:
        """Commit, for an inactive group, offsets given as ``OffsetSpec``,
        ``OffsetTimestamp`` or an int, each clamped to the partition's [earliest,
        latest]; ``{tp: {'error': error class, 'offset': committed}}``."""
        if not offset_specs:
            return {}
        for tp, spec in offset_specs.items():
            if isinstance(spec, bool) or not isinstance(spec, int):
                raise TypeError(
                    f"Unsupported reset target for {tp}: {spec!r} "
                    "(expected OffsetSpec, OffsetTimestamp, or int offset)"
                )
        tps = [TopicPartition(*tp) for tp in offset_specs]
        current = self._admin.list_consumer_group_offsets(group_id, tps)
        lookups = {
            tp: CoreOffsetSpec(int(spec))
            for tp, spec in zip(tps, offset_specs.values(), strict=True)
            if isinstance(spec, OffsetSpec | OffsetTimestamp)
        }
        earliest = self._offsets({tp: CoreOffsetSpec.earliest() for tp in tps})
        latest = self._offsets({tp: CoreOffsetSpec.latest() for tp in tps})
        resolved = self._offsets(lookups) if lookups else {}
        target: Offsets = {}
        for tp, spec in zip(tps, offset_specs.values(), strict=True):
            raw = resolved.get(tp, int(spec))
            low, high = earliest[tp], latest[tp]
            offset = high if raw < 0 or raw > high else max(raw, low)
            before = current.get(tp)
            target[tp] = (
                OffsetAndMetadata(offset) if before is None else before._replace(offset=offset)
            )
        done = self._admin.alter_consumer_group_offsets(group_id, target)
        return {
            tp: {"error": error_class(item.error), "offset": target[tp].offset}
            for tp, item in done.items()
        }

    def _offsets(self, specs: dict[TopicPartition, CoreOffsetSpec]) -> dict[TopicPartition, int]:
        found = self._admin.list_offsets(specs)
        raise_first(found)
        return {tp: -1 if o.offset is None else o.offset for tp, o in found.all().items()}

    def delete_group_offsets(
        self,
        group_id: str,
        partitions: Iterable[TopicPartition],
        group_coordinator_id: int | None = None,
    ) -> dict[TopicPartition, ErrorClass]:
        """Forget a group's committed offsets; each partition's error class. A
        group-level error (the group is not empty, unknown) raises."""
        wanted = list(partitions)
        if not wanted:
            return {}
        done = self._admin.delete_consumer_group_offsets(group_id, wanted)
        return {tp: error_class(item.error) for tp, item in done.items()}

    # -- ACLs (kafkacore's client answers kafka-python's ACL types in these shapes) -----
    def describe_acls(self, acl_filter: ACLFilter) -> tuple[list[ACL], type[NoError]]:
        """The ACLs matching ``acl_filter``: ``(acls, NoError)``; an error raises."""
        return self._admin.describe_acls(acl_filter)

    def create_acls(self, acls: Iterable[ACL]) -> CreatedAcls:
        """Create ACLs: ``{'succeeded': [ACL], 'failed': [errors]}``."""
        return self._admin.create_acls(list(acls))

    def delete_acls(self, acl_filters: Iterable[ACLFilter]) -> DeletedAcls:
        """Delete the ACLs each filter matches: ``[(filter, deleted ACLs, error)]``."""
        return self._admin.delete_acls(list(acl_filters))

    # -- transactions -----------------------------------------------------------------
    def list_transactions(
        self,
        broker_ids: Iterable[int] | None = None,
        producer_id_filters: Iterable[int] | None = None,
        state_filters: Iterable[TransactionState | str] | None = None,
        duration_filter_ms: int | None = None,
        transactional_id_pattern: str | None = None,
    ) -> dict[int, list[TransactionListing]]:
        """``{broker id: [TransactionListing]}`` of every broker (or ``broker_ids``)."""
        states = (
            None
            if not state_filters
            else [
                member(TransactionState, s, "list_transactions: state_filters").value
                for s in state_filters
            ]
        )
        listed = self._admin.list_transactions(
            states=states,
            producer_ids=None if producer_id_filters is None else list(producer_id_filters),
            duration_ms=duration_filter_ms,
            transactional_id_pattern=transactional_id_pattern,
        ).all()
        brokers = (
            list(broker_ids)
            if broker_ids is not None
            else [b.node_id for b in self._admin.describe_cluster().brokers]
        )
        out: dict[int, list[TransactionListing]] = {b: [] for b in brokers}
        for t in listed:
            if t.coordinator in out:
                out[t.coordinator].append(
                    TransactionListing(
                        t.transactional_id, t.producer_id, TransactionState(t.state.value)
                    )
                )
        return out

    def describe_transactions(
        self, transactional_ids: Iterable[str]
    ) -> dict[str, TransactionDescription]:
        """``{transactional_id: TransactionDescription}``; an id's error raises."""
        ids = list(transactional_ids)
        if not ids:
            return {}
        return {
            tid: TransactionDescription(
                -1 if d.coordinator is None else d.coordinator,
                TransactionState(d.state.value),
                d.producer_id,
                d.producer_epoch,
                d.transaction_timeout_ms,
                -1 if d.transaction_start_time_ms is None else d.transaction_start_time_ms,
                set(d.partitions),
            )
            for tid, d in self._admin.describe_transactions(ids).all().items()
        }

    def describe_producers(
        self, partitions: Iterable[TopicPartition], broker_id: int | None = None
    ) -> dict[TopicPartition, PartitionProducerState]:
        """Each partition's active producers, from its leader; an error raises.
        ``broker_id`` (asking a chosen replica) is not supported."""
        if broker_id is not None:
            raise TypeError(
                "describe_producers: broker_id is not supported (kafkacore asks each "
                "partition's leader); leave it out"
            )
        wanted = list(partitions)
        if not wanted:
            return {}
        return {
            tp: PartitionProducerState(
                [
                    ProducerState(
                        p.producer_id,
                        p.producer_epoch,
                        p.last_sequence,
                        -1 if p.last_timestamp is None else p.last_timestamp,
                        -1 if p.coordinator_epoch is None else p.coordinator_epoch,
                        (
                            -1
                            if p.current_transaction_start_offset is None
                            else p.current_transaction_start_offset
                        ),
                    )
                    for p in producers
                ]
            )
            for tp, producers in self._admin.describe_producers(wanted).all().items()
        }

    def abort_transaction(self, spec: AbortTransactionSpec) -> None:
        """Abort an open transaction on one partition (WriteTxnMarkers to its leader)."""
        self._admin.abort_transaction(
            CoreAbortSpec(
                partition=TopicPartition(*spec.topic_partition),
                producer_id=spec.producer_id,
                producer_epoch=spec.producer_epoch,
                coordinator_epoch=max(spec.coordinator_epoch, 0),
            )
        )

    # -- SCRAM credentials ------------------------------------------------------------
    def alter_user_scram_credentials(
        self, alterations: Iterable[UserScramCredentialDeletion | UserScramCredentialUpsertion]
    ) -> dict[str, str | None]:
        """Delete or set SCRAM credentials: ``{user: None or the error message}``."""
        core: list[ScramCredentialDeletion | ScramCredentialUpsertion] = []
        for alt in alterations:
            if isinstance(alt, UserScramCredentialDeletion):
                core.append(ScramCredentialDeletion(user=alt.user, mechanism=alt.mechanism))
            elif isinstance(alt, UserScramCredentialUpsertion):
                core.append(
                    ScramCredentialUpsertion(
                        user=alt.user,
                        mechanism=alt.mechanism,
                        password=alt.password,
                        salt=alt.salt,
                        iterations=alt.iterations,
                    )
                )
            else:
                raise TypeError(
                    "alterations must be UserScramCredentialDeletion or "
                    f"UserScramCredentialUpsertion, got {type(alt).__name__}"
                )
        done = self._admin.alter_user_scram_credentials(core)
        return {user: None if item.ok else str(item.error) for user, item in done.items()}

    def describe_user_scram_credentials(
        self, users: Iterable[str] | None = None
    ) -> dict[str, dict[str, Any]]:
        """``{user: {'error': None or message, 'credential_infos': [{mechanism,
        iterations}]}}`` (``users`` None: every user with credentials)."""
        found = self._admin.describe_user_scram_credentials(None if users is None else list(users))
        return {
            user: {
                "error": None if item.ok else str(item.error),
                "credential_infos": [
                    {"mechanism": c.mechanism, "iterations": c.iterations}
                    for c in (item.value or ())
                ],
            }
            for user, item in found.items()
        }
