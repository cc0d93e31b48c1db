"""A producer's refusals keep the code and the answering broker's id (issue 13)."""

from __future__ import annotations

from kafkacore.errors import BrokerError
from kafkacore.protocol import messages as m
from kafkacore.protocol.enums import ErrorCode
from tests.producer.fakes import T0, SenderRig
from tests.producer.test_coordinator import _Calls


def test_a_refused_batch_names_its_leader() -> None:
    s = SenderRig()
    s.ready()
    s.append(T0)
    s.sender.drain(0.0, force=True)
    s.answer({T0: ErrorCode.TOPIC_AUTHORIZATION_FAILED}, error_message="no WRITE")
    error = s.reports[0].error
    assert isinstance(error, BrokerError) and error.code == ErrorCode.TOPIC_AUTHORIZATION_FAILED
    assert error.node_id == 0 and "broker 0 refused t-0" in str(error)


def test_a_coordinator_refusal_names_the_broker_that_answered() -> None:
    c = _Calls()
    c.call()
    c.send.handles[-1].node_id = 4  # the client fills it when it sends
    c.answer(m.EndTxnResponse(error_code=ErrorCode.INVALID_TXN_STATE))
    (error,) = c.failed
    assert isinstance(error, BrokerError) and error.code == ErrorCode.INVALID_TXN_STATE
    assert error.node_id == 4 and str(error) == "INVALID_TXN_STATE: EndTxnRequest (broker 4)"
