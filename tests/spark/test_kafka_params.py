"""``kafka.*`` options become kafkacore options, or a clear error naming the option."""

from __future__ import annotations

import pytest

from pyspark_kafkacore._kafka_params import KafkaOptionError, kafka_options


def test_java_names_become_kafkacore_names_with_typed_values() -> None:
    got = kafka_options(
        {
            "kafka.bootstrap.servers": "127.0.0.1:9092",
            "kafka.isolation.level": "read_committed",
            "kafka.fetch.max.bytes": "1048576",
            "kafka.check.crcs": "false",
            "subscribe": "t",  # not a kafka.* option: ignored here
        },
        "consumer",
    )
    assert got == {
        "bootstrap_servers": "127.0.0.1:9092",
        "isolation_level": "read_committed",
        "fetch_max_bytes": 1048576,
        "check_crcs": False,
    }


def test_security_properties_are_translated() -> None:
    got = kafka_options(
        {
            "kafka.security.protocol": "SASL_SSL",
            "kafka.sasl.mechanism": "SCRAM-SHA-256",
            "kafka.sasl.jaas.config": (
                "org.apache.kafka.common.security.scram.ScramLoginModule required "
                'username="alice" password="alice-secret";'
            ),
            "kafka.ssl.truststore.type": "PEM",
            "kafka.ssl.truststore.location": "/tmp/ca.crt",
            "kafka.ssl.endpoint.identification.algorithm": "",
        },
        "producer",
    )
    assert got == {
        "security_protocol": "SASL_SSL",
        "sasl_mechanism": "SCRAM-SHA-256",
        "sasl_plain_username": "alice",
        "sasl_plain_password": "alice-secret",
        "ssl_cafile": "/tmp/ca.crt",
        "ssl_check_hostname": False,
    }


@pytest.mark.parametrize(
    ("key", "role", "needle"),
    [
        ("kafka.auto.offset.reset", "consumer", "startingOffsets"),
        ("kafka.enable.auto.commit", "consumer", "kafka.enable.auto.commit"),
        ("kafka.value.deserializer", "consumer", "binary"),
        ("kafka.interceptor.classes", "producer", "interceptors"),
        ("kafka.fetch.max.byte", "consumer", "did you mean kafka.fetch.max.bytes"),
        ("kafka.linger.ms", "consumer", "no setting 'linger.ms'"),
        ("kafka.transactional.id", "producer", "transactionalIdPrefix"),
    ],
)
def test_refused_and_unknown_options_name_the_option(key: str, role: str, needle: str) -> None:
    with pytest.raises(KafkaOptionError, match=key.replace(".", r"\.")) as info:
        kafka_options({key: "x"}, role)  # type: ignore[arg-type]
    assert needle in str(info.value)


def test_bad_values_and_stores_are_refused() -> None:
    with pytest.raises(KafkaOptionError, match="expected an integer"):
        kafka_options({"kafka.fetch.max.bytes": "lots"}, "consumer")
    with pytest.raises(KafkaOptionError, match="only PEM"):
        kafka_options(
            {"kafka.ssl.truststore.type": "JKS", "kafka.ssl.truststore.location": "/x.jks"},
            "consumer",
        )
    with pytest.raises(KafkaOptionError, match="PlainLoginModule"):
        kafka_options({"kafka.sasl.jaas.config": "com.example.Custom required;"}, "consumer")


def test_union_typed_fields_convert_by_their_annotation() -> None:
    got = kafka_options(
        {
            "kafka.acks": "all",
            "kafka.enable.idempotence": "false",
            "kafka.compression.type": "zstd",
            "kafka.linger.ms": "20",
        },
        "producer",
    )
    assert got == {
        "acks": "all",
        "enable_idempotence": False,
        "compression_type": "zstd",
        "linger_ms": 20,
    }
    assert kafka_options({"kafka.acks": "1"}, "producer") == {"acks": 1}
    with pytest.raises(KafkaOptionError, match="expected true or false"):
        kafka_options({"kafka.enable.idempotence": "sometimes"}, "producer")
