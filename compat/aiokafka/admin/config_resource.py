"""aiokafka's ``aiokafka.admin.config_resource``: ``ConfigResource`` and
``ConfigResourceType`` (kafkacore's enum, a superset of aiokafka's TOPIC and
BROKER with the same values)."""

from kafkacore.admin import ConfigResourceType
from kafkacore.compat.kafka.admin._types import ConfigResource

__all__ = ["ConfigResource", "ConfigResourceType"]
