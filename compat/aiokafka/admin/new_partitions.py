"""aiokafka's ``aiokafka.admin.new_partitions``: kafka-python's ``NewPartitions``
shape, ``NewPartitions(total_count, new_assignments=None)``."""

from kafkacore.transports._admin_common import NewPartitions

__all__ = ["NewPartitions"]
