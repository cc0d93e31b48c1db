"""kafka-python's ``kafka.producer``: ``KafkaProducer`` (kafkacore's blocking producer)."""

from kafkacore.transports.selector import KafkaProducer

__all__ = ["KafkaProducer"]
