"""kafka-python 3's ``KafkaAdminClient``: its calls and shapes over kafkacore's
blocking admin client (see :mod:`kafkacore.compat.kafka.admin`)."""

from __future__ import annotations

from ._configs import ConfigCalls
from ._groups import GroupCalls
from ._topics import TopicCalls

__all__ = ["KafkaAdminClient"]


class KafkaAdminClient(TopicCalls, ConfigCalls, GroupCalls):
    """kafka-python 3's admin client over kafkacore: ``KafkaAdminClient(**configs)``,
    the same calls with the same arguments, answering in kafka-python's shapes.
    Safe from any thread; ``close()`` (or ``with``) closes every connection, and a
    client dropped unclosed warns with ``ResourceWarning``."""

    def __enter__(self) -> KafkaAdminClient:
        return self
