"""The admin machine: Kafka's administrative API, sans-IO.

Theory of operation
-------------------
:class:`AdminCore` is stacked on a :class:`~kafkacore.client.KafkaClientCore`
(:class:`~kafkacore.client.stack.StackedMachine`) and implements the same
:class:`~kafkacore.client.driver.Driven` contract, so a transport drives it
as it drives the producer or the consumer. Every command checks its
arguments (``TypeError``/``ValueError`` at once), then returns an
:class:`~kafkacore.operation.Operation` completed exactly once, in a later
step, with :class:`~kafkacore.operation.OperationCompleted`. Time comes in
as ``now=`` on every call.

The job engine (requests, retries with backoff, the command deadline) is
:mod:`kafkacore.admin._base`; the commands live in one module per area:

- :mod:`~kafkacore.admin._topics`: topics and the cluster (controller, any broker);
- :mod:`~kafkacore.admin._configs`: configs (any broker; a broker's own
  resources to that broker);
- :mod:`~kafkacore.admin._groups`: consumer and share groups (every broker
  for listings, the group coordinator otherwise);
- :mod:`~kafkacore.admin._offsets`: committed offsets and share-group start
  offsets (the group coordinator);
- :mod:`~kafkacore.admin._records`: ``list_offsets`` and ``delete_records``
  (the partition leaders);
- :mod:`~kafkacore.admin._replicas`: leader elections, partition
  reassignments (the controller) and log directories (each broker);
- :mod:`~kafkacore.admin._transactions`: producers and transactions
  (leaders, every broker, transaction coordinators);
- :mod:`~kafkacore.admin._quotas`: client quotas and SCRAM credentials
  (any broker);
- :mod:`~kafkacore.admin._acls`: ACLs (any broker);
- :mod:`~kafkacore.admin._tokens`: delegation tokens (any broker, over SASL);
- :mod:`~kafkacore.admin._features`: feature levels (any broker to describe,
  the controller to update);
- :mod:`~kafkacore.admin._kraft`: the metadata quorum and topics page by
  page (any broker).
"""

from __future__ import annotations

from kafkacore.admin._acls import AclCommands
from kafkacore.admin._configs import ConfigCommands
from kafkacore.admin._features import FeatureCommands
from kafkacore.admin._groups import GroupCommands
from kafkacore.admin._kraft import KraftCommands
from kafkacore.admin._offsets import OffsetCommands
from kafkacore.admin._quotas import QuotaCommands
from kafkacore.admin._records import RecordCommands
from kafkacore.admin._replicas import ReplicaCommands
from kafkacore.admin._tokens import TokenCommands
from kafkacore.admin._topics import TopicCommands
from kafkacore.admin._transactions import TransactionCommands

__all__ = ["AdminCore"]


class AdminCore(
    TopicCommands,
    ConfigCommands,
    GroupCommands,
    OffsetCommands,
    RecordCommands,
    ReplicaCommands,
    TransactionCommands,
    QuotaCommands,
    AclCommands,
    TokenCommands,
    FeatureCommands,
    KraftCommands,
):
    """Sans-IO admin client; see the module docstring and ``docs/admin.md``."""
