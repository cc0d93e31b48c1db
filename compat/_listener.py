"""The peers' ``ConsumerRebalanceListener`` base classes, as kafkacore calls them.

kafkacore's consumers take any object with ``on_partitions_revoked`` and
``on_partitions_assigned`` (and, optionally, ``on_partitions_lost``); these
abstract bases are what the peers' users subclass. kafka-python's default
``on_partitions_lost`` calls ``on_partitions_revoked``, as Java's does;
aiokafka's listener has no such method (kafkacore then calls
``on_partitions_revoked`` for lost partitions too). On the async consumers
the methods may be coroutine functions; kafkacore awaits them.
"""

from __future__ import annotations

import abc
from typing import Any

__all__ = ["AsyncConsumerRebalanceListener", "ConsumerRebalanceListener", "KafkaPythonListener"]


class ConsumerRebalanceListener(abc.ABC):
    """aiokafka's listener: implement both methods (plain or ``async def``)."""

    @abc.abstractmethod
    def on_partitions_revoked(self, revoked: Any) -> Any:
        """Partitions this member gives up (before they move)."""

    @abc.abstractmethod
    def on_partitions_assigned(self, assigned: Any) -> Any:
        """Partitions this member now owns."""


class KafkaPythonListener(ConsumerRebalanceListener):
    """kafka-python's listener: lost partitions are revoked unless overridden."""

    def on_partitions_lost(self, lost: Any) -> Any:
        return self.on_partitions_revoked(lost)


class AsyncConsumerRebalanceListener(KafkaPythonListener):
    """kafka-python 3's async listener name: the same calls, awaited when coroutines."""
