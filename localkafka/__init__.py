"""localkafka: real Apache Kafka brokers on 127.0.0.1 for kafkacore's tests and demo.

Kafka's jars come from Maven Central into a per-user cache
(:func:`ensure_libs`); :class:`LocalKafka` formats and starts one combined
KRaft node or a 3-node cluster with PLAINTEXT, SASL_PLAINTEXT, SSL,
SASL_SSL and MTLS listeners on demand, optionally behind fault-injecting
proxies (:class:`FaultProxy`). See ``docs/localkafka.md``.
"""

from kafkacore.testing.cluster import KafkaNode, LocalKafka, NodeState, StartError, TopicError
from kafkacore.testing.config import CLIENT_LISTENERS, DEFAULT_USERS, Profile
from kafkacore.testing.libs import KAFKA_VERSION, LibsError, ensure_libs
from kafkacore.testing.process import reap_stale
from kafkacore.testing.proxy import FaultMix, FaultProxy

__all__ = [
    "CLIENT_LISTENERS",
    "DEFAULT_USERS",
    "KAFKA_VERSION",
    "FaultMix",
    "FaultProxy",
    "KafkaNode",
    "LibsError",
    "LocalKafka",
    "NodeState",
    "Profile",
    "StartError",
    "TopicError",
    "ensure_libs",
    "reap_stale",
]
