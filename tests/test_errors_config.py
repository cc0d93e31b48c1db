"""Every option mistake of every class is a ConfigError (a ValueError), naming the
class, the option and what to do (issue 13)."""

from __future__ import annotations

from typing import Any

import pytest

from kafkacore.client.config import parse_bootstrap_servers
from kafkacore.errors import ConfigError, LocalProtocolError, UnknownOptionError
from kafkacore.options import Role, known_options, split_options
from kafkacore.transports import asyncio as aio
from kafkacore.transports import selector
from kafkacore.transports import trio as tr

CLASSES: list[type[Any]] = [
    selector.KafkaClient,
    selector.KafkaConsumer,
    selector.KafkaProducer,
    selector.KafkaAdminClient,
    aio.AsyncKafkaClient,
    aio.AsyncKafkaConsumer,
    aio.AsyncKafkaProducer,
    aio.AsyncKafkaAdminClient,
    tr.TrioKafkaClient,
    tr.TrioKafkaConsumer,
    tr.TrioKafkaProducer,
    tr.TrioKafkaAdminClient,
]
#: A bad value of an option only this kind of class has (its own config's check).
OWN_BAD = {
    "Consumer": {"auto_offset_reset": "sometimes"},
    "Producer": {"acks": 2},
    "AdminClient": {"default_api_timeout_ms": 0},
    "Client": {"metadata_recovery_strategy": "maybe"},
}


def kind(cls: type[Any]) -> str:
    return next(k for k in OWN_BAD if cls.__name__.endswith(k))


@pytest.mark.parametrize("cls", CLASSES, ids=lambda c: c.__name__)
@pytest.mark.parametrize(
    "options",
    [
        {"request_timeout_ms": -5},  # the client config's range check
        {"security_protocol": "TLS"},  # the client config's choice check
        {"receive_buffer_bytes": 0},  # the transport's socket options
        {"ssl_keyfile": "k.pem"},  # the transport's TLS options
        {"rng": 42},
        {"enable_incremental_fetch_sessions": False},  # kafka-python's, not implemented
        "own",
    ],
    ids=lambda o: o if isinstance(o, str) else next(iter(o)),
)
def test_every_bad_option_value_is_a_config_error(cls: type[Any], options: Any) -> None:
    if options == "own":
        options = OWN_BAD[kind(cls)]
    with pytest.raises(ConfigError) as caught:
        cls("127.0.0.1:1", **options)
    assert isinstance(caught.value, ValueError)
    assert isinstance(caught.value, LocalProtocolError)  # what older code caught
    assert str(caught.value).startswith(f"{cls.__name__}: ")
    assert next(iter(options)) in str(caught.value)


@pytest.mark.parametrize("cls", CLASSES, ids=lambda c: c.__name__)
def test_a_typo_names_the_closest_options_and_the_docs(cls: type[Any]) -> None:
    with pytest.raises(UnknownOptionError) as caught:
        cls("127.0.0.1:1", request_timeout=5000)
    text = str(caught.value)
    assert isinstance(caught.value, TypeError) and isinstance(caught.value, ValueError)
    assert text.startswith(f"{cls.__name__}: unknown option 'request_timeout'; ")
    assert "did you mean 'request_timeout_ms'" in text
    assert "docs/client.md" in text


def test_the_suggestions_are_the_classes_own() -> None:
    with pytest.raises(UnknownOptionError, match="did you mean 'group_id'") as caught:
        split_options("KafkaConsumer", Role.CONSUMER, None, {"groupid": "g"})
    assert "docs/consumer.md and docs/client.md" in str(caught.value)
    # A producer is not offered the consumer's names.
    with pytest.raises(UnknownOptionError) as caught:
        split_options("KafkaProducer", Role.PRODUCER, None, {"group_idd": "g"})
    assert "'group_id'" not in str(caught.value)
    # Names a class takes itself are offered too.
    with pytest.raises(UnknownOptionError, match="did you mean 'value_deserializer'"):
        split_options(
            "C", Role.CONSUMER, None, {"value_deserialiser": 1}, own=["value_deserializer"]
        )
    # Nothing close: no guess, still the docs.
    with pytest.raises(UnknownOptionError) as caught:
        split_options("C", Role.CLIENT, None, {"zzzzzz": 1})
    assert "did you mean" not in str(caught.value)
    assert "known_options(Role.CLIENT)" in str(caught.value)
    assert "zzzzzz" not in known_options(Role.CLIENT)


def test_kafka_python_names_are_renamed_or_refused_with_the_reason() -> None:
    split = split_options("C", Role.CONSUMER, None, {"receive_message_max_bytes": 1234})
    assert split.client.max_response_bytes == 1234
    # The value that asks for what kafkacore does anyway is accepted and dropped.
    split = split_options(
        "C",
        Role.CONSUMER,
        None,
        {"enable_incremental_fetch_sessions": True, "selector": None, "metric_reporters": []},
    )
    assert split.consumer is not None
    with pytest.raises(ConfigError, match=r"^C: kafka-python's option 'selector' is not supported"):
        split_options("C", Role.CONSUMER, None, {"selector": object()})
    with pytest.raises(ConfigError, match="given twice"):
        split_options(
            "C", Role.CLIENT, None, {"receive_message_max_bytes": 1, "max_response_bytes": 2}
        )


@pytest.mark.parametrize(
    ("address", "wanted"),
    [
        (
            "http://host:9092",
            "has a scheme ('http://'); no scheme expected: give 'host:port', e.g. 'host:9092'",
        ),
        ("kafka://b1:9093", "e.g. 'b1:9093'"),
        ("SSL://[::1]:9093/", "e.g. '[::1]:9093'"),
    ],
)
def test_a_url_in_bootstrap_servers_says_no_scheme(address: str, wanted: str) -> None:
    with pytest.raises(ConfigError) as caught:
        parse_bootstrap_servers(address)
    assert wanted in str(caught.value)
    assert "IPv6" not in str(caught.value)
