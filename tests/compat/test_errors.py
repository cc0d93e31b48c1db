"""The peers' error names, pointed at kafkacore (kafkacore.compat.errors), catch its errors.

Checked against the peers' own packages (installed from PyPI with the ``peers`` extra): every
error class kafka-python 3 and aiokafka 0.14 export exists here under the same name, a class
that carries a broker code carries the same code as the peer's, and the bases keep their
meaning (``except RetriableError`` catches what Java's ``RetriableException`` covers).
"""

from __future__ import annotations

import aiokafka.errors
import kafka.errors
import pytest

import kafkacore.compat.aiokafka.errors as aio_names
import kafkacore.compat.kafka.errors as kp_names
from kafkacore.compat import errors as compat
from kafkacore.consumer import CommitFailedError, ConsumerClosedError
from kafkacore.errors import (
    AuthorizationError,
    BrokerError,
    InvalidMetadataError,
    KafkaConnectionError,
    KafkaError,
    KafkaTimeoutError,
    LocalProtocolError,
    RetriableError,
)
from kafkacore.protocol import error_codes


def _error_names(module: object) -> dict[str, type[BaseException]]:
    return {
        name: value
        for name, value in vars(module).items()
        if isinstance(value, type) and issubclass(value, BaseException) and name[0] != "_"
    }


PEERS = {
    "kafka.errors": _error_names(kafka.errors),
    "aiokafka.errors": _error_names(aiokafka.errors),
}


@pytest.mark.parametrize("peer", sorted(PEERS))
def test_every_peer_error_name_is_there(peer: str) -> None:
    missing = sorted(set(PEERS[peer]) - set(compat.__all__))
    assert missing == [], f"{peer} names kafkacore.compat.errors lacks: {missing}"


@pytest.mark.parametrize("peer", sorted(PEERS))
def test_a_broker_code_is_the_same_code(peer: str) -> None:
    wrong = []
    for name, theirs in PEERS[peer].items():
        ours = getattr(compat, name)
        code = getattr(theirs, "errno", None)
        is_code = isinstance(code, int) and code != 0 and issubclass(ours, BrokerError)
        if is_code and (ours.code != code or ours.errno != code):
            wrong.append(f"{name}: {peer} {code}, kafkacore {ours.code}")
    assert wrong == []


def test_the_two_layouts_share_one_module() -> None:
    assert kp_names.__all__ == aio_names.__all__ == compat.__all__
    assert kp_names.CommitFailedError is aio_names.CommitFailedError is CommitFailedError


def test_bases_follow_javas_hierarchy() -> None:
    # Generated from kafka-clients' own exception hierarchy (codegen/errors.py).
    assert issubclass(error_codes.RequestTimedOutError, RetriableError)
    assert not issubclass(error_codes.RequestTimedOutError, InvalidMetadataError)
    assert issubclass(error_codes.NotLeaderOrFollowerError, InvalidMetadataError)
    assert issubclass(error_codes.TopicAuthorizationFailedError, AuthorizationError)
    assert not issubclass(error_codes.InvalidTopicError, RetriableError)
    assert issubclass(KafkaTimeoutError, RetriableError)
    assert issubclass(KafkaConnectionError, InvalidMetadataError)
    # The flags agree with the classes, as the peers' flags do.
    for cls in error_codes.ERRORS.values():
        assert cls.retriable == issubclass(cls, RetriableError), cls
        assert cls.invalid_metadata == issubclass(cls, InvalidMetadataError), cls


def test_except_clauses_written_for_the_peers_catch_kafkacores_errors() -> None:
    raised = error_codes.NotLeaderOrFollowerError("fetching t-0", node_id=1)
    with pytest.raises(compat.NotLeaderForPartitionError):
        raise raised
    with pytest.raises(compat.RetriableError):
        raise raised
    with pytest.raises(compat.BrokerResponseError):
        raise raised
    assert raised.errno == 6 and raised.retriable and raised.invalid_metadata
    with pytest.raises(compat.ConsumerStoppedError):
        raise ConsumerClosedError("AsyncKafkaConsumer.getone: closed; make a new consumer")
    with pytest.raises(compat.IllegalStateError):
        raise LocalProtocolError("subscribe: needs a group_id")
    with pytest.raises(compat.KafkaError):
        raise KafkaTimeoutError("flush: 1 record not delivered within 1 s")


def test_names_nothing_raises_are_still_kafka_errors() -> None:
    for name in ("QuotaViolationError", "TooManyInFlightRequests", "UnsupportedCodecError"):
        assert issubclass(getattr(compat, name), KafkaError)
