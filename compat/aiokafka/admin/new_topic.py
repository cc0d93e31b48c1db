"""aiokafka's ``aiokafka.admin.new_topic``."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from kafkacore.errors import LocalProtocolError

__all__ = ["NewTopic"]


class NewTopic:
    """A topic to create: partition and replica counts (-1: the broker's default)
    or, instead of both, ``replica_assignments`` ``{partition: [brokers]}``."""

    def __init__(
        self,
        name: str,
        num_partitions: int,
        replication_factor: int,
        replica_assignments: Mapping[int, Sequence[int]] | None = None,
        topic_configs: Mapping[str, str] | None = None,
    ) -> None:
        counts_left_out = num_partitions == -1 or replication_factor == -1
        if counts_left_out == (replica_assignments is None):
            # aiokafka's IllegalArgumentError, which kafkacore.compat binds to this.
            raise LocalProtocolError(
                "either num_partitions/replication_factor or replica_assignment must be specified"
            )
        self.name = name
        self.num_partitions = num_partitions
        self.replication_factor = replication_factor
        self.replica_assignments = dict(replica_assignments or {})
        self.topic_configs = dict(topic_configs or {})
