"""Options reach the machines they set: the one table, and every class of every transport.

The table (``kafkacore.options``) is unit-tested without a broker; then
each of the nine user-facing classes is built with non-default options and
asked, on its own loop, what its client core (and consumer or producer
core) was configured with. A client option given to a consumer or a
producer must reach the client core: ``metadata_max_age_ms`` used to stop
at the consumer's own config.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

import pytest
import trio

from kafkacore.client import ClientConfig
from kafkacore.consumer import ConsumerConfig
from kafkacore.errors import ConfigError, UnknownOptionError
from kafkacore.options import OPTION_TABLE, Role, Target, known_options, split_options
from kafkacore.producer import PRODUCER_OPTIONS

# -- the table ---------------------------------------------------------------


def test_every_config_field_is_routed_to_its_config() -> None:
    for name in ClientConfig.__dataclass_fields__:
        if name not in ("bootstrap_servers", "bootstrap_addresses"):
            assert Target.CLIENT in OPTION_TABLE[name], name
    for name in ConsumerConfig.__dataclass_fields__:
        assert Target.CONSUMER in OPTION_TABLE[name], name
    for name in PRODUCER_OPTIONS:
        assert OPTION_TABLE[name] == {Target.PRODUCER}, name
    # Derived fields are not options.
    assert "bootstrap_addresses" not in OPTION_TABLE


def test_a_name_two_configs_know_sets_both() -> None:
    assert OPTION_TABLE["metadata_max_age_ms"] == {Target.CLIENT, Target.CONSUMER}
    assert OPTION_TABLE["retry_backoff_ms"] == {Target.CLIENT, Target.CONSUMER}
    split = split_options(
        "C", Role.CONSUMER, "h:1", {"metadata_max_age_ms": 1234, "retry_backoff_ms": 7}
    )
    assert split.client.metadata_max_age_ms == 1234
    assert split.client.retry_backoff_ms == 7
    assert split.consumer is not None
    assert split.consumer.metadata_max_age_ms == 1234
    assert split.consumer.retry_backoff_ms == 7
    assert split.producer is None


def test_each_option_goes_only_where_it_belongs() -> None:
    split = split_options(
        "P",
        Role.PRODUCER,
        "h:1",
        {"linger_ms": 9, "request_timeout_ms": 4321, "max_in_flight_requests_per_connection": 3},
    )
    assert split.producer is not None and split.consumer is None
    assert split.producer.linger_ms == 9
    assert split.client.request_timeout_ms == 4321
    # The producer reads the in-flight limit itself (idempotence needs <= 5).
    assert split.producer.max_in_flight == 3
    assert split.transport["socket_options"] == split.client.socket_options


@pytest.mark.parametrize(
    ("role", "name"),
    [
        (Role.CLIENT, "group_id"),  # a consumer option given to a client
        (Role.CLIENT, "linger_ms"),  # a producer option given to a client
        (Role.CONSUMER, "acks"),
        (Role.PRODUCER, "group_id"),
        (Role.PRODUCER, "nope"),
    ],
)
def test_an_option_the_class_does_not_know_is_a_type_error(role: Role, name: str) -> None:
    # A TypeError as Python's own, and a ConfigError (ValueError) as every option mistake.
    with pytest.raises(UnknownOptionError, match=rf"^Owner: unknown option '{name}';") as info:
        split_options("Owner", role, "h:1", {name: 1})
    assert isinstance(info.value, TypeError) and isinstance(info.value, ValueError)
    assert f"known_options(Role.{role.name})" in str(info.value)
    assert name not in known_options(role)


def test_bad_values_keep_their_configs_errors() -> None:
    with pytest.raises(ConfigError, match=r"^C: ClientConfig\.metadata_max_age_ms"):
        split_options("C", Role.CONSUMER, "h:1", {"metadata_max_age_ms": 0})
    with pytest.raises(ConfigError, match=r"^C: ConsumerConfig\.auto_offset_reset"):
        split_options("C", Role.CONSUMER, "h:1", {"auto_offset_reset": "sometimes"})
    with pytest.raises(ConfigError, match=r"^P: ProducerConfig: acks"):
        split_options("P", Role.PRODUCER, "h:1", {"acks": 2})


# -- every class of every transport --------------------------------------------

OPTIONS: dict[str, Any] = {"metadata_max_age_ms": 4321, "request_timeout_ms": 12345}


def _client_config(core: Any) -> tuple[int, int]:
    config = core.config if isinstance(core.config, ClientConfig) else core.client.config
    return config.metadata_max_age_ms, config.request_timeout_ms


EXPECTED = (OPTIONS["metadata_max_age_ms"], OPTIONS["request_timeout_ms"])


def _selector(kind: str, bootstrap: str) -> tuple[int, int]:
    from kafkacore.transports.selector import KafkaClient, KafkaConsumer, KafkaProducer

    obj: Any
    if kind == "client":
        obj = KafkaClient(bootstrap, **OPTIONS)
    elif kind == "consumer":
        obj = KafkaConsumer(bootstrap_servers=bootstrap, group_id="g", **OPTIONS)
    else:
        obj = KafkaProducer(bootstrap, **OPTIONS)
    try:
        got: tuple[int, int] = obj.run_on_loop(_client_config)
        if kind == "consumer":
            assert obj.run_on_loop(lambda core: core.config.metadata_max_age_ms) == 4321
        return got
    finally:
        obj.close()


async def _async(kind: str, module: Any, bootstrap: str) -> tuple[int, int]:
    prefix = "Async" if module.__name__ == "kafkacore.transports.asyncio" else "Trio"
    cls = getattr(module, f"{prefix}Kafka{kind.capitalize()}")
    if kind == "consumer":
        obj = cls(bootstrap_servers=bootstrap, group_id="g", **OPTIONS)
    else:
        obj = cls(bootstrap, **OPTIONS)
    async with obj:
        got: tuple[int, int] = obj.run_on_loop(_client_config)
        if kind == "consumer":
            assert obj.run_on_loop(lambda core: core.config.metadata_max_age_ms) == 4321
        return got


@pytest.mark.parametrize("kind", ["client", "consumer", "producer"])
@pytest.mark.parametrize("style", ["selector", "asyncio", "trio"])
def test_client_options_reach_the_client_core(kafka_broker: Any, style: str, kind: str) -> None:
    bootstrap = kafka_broker.bootstrap
    run: Callable[[], tuple[int, int]]
    if style == "selector":
        run = lambda: _selector(kind, bootstrap)  # noqa: E731
    elif style == "asyncio":
        import kafkacore.transports.asyncio as aio

        run = lambda: asyncio.run(_async(kind, aio, bootstrap))  # noqa: E731
    else:
        import kafkacore.transports.trio as tr

        run = lambda: trio.run(_async, kind, tr, bootstrap)  # noqa: E731
    assert run() == EXPECTED
