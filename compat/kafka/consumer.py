"""kafka-python's ``kafka.consumer``: ``KafkaConsumer`` (kafkacore's blocking consumer)."""

from kafkacore.transports.selector import KafkaConsumer

__all__ = ["KafkaConsumer"]
