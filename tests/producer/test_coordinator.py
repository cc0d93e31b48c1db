"""CoordinatorRequests: what an answer means (the table), retries under Deadlines, fencing."""

from __future__ import annotations

from collections.abc import Hashable
from typing import Any

import pytest

from kafkacore.client import AnyNode, Target
from kafkacore.errors import AuthenticationError, KafkaConnectionError
from kafkacore.producer.coordinator import (
    CoordinatorCall,
    CoordinatorRequests,
    Reaction,
    error_code,
    react,
)
from kafkacore.protocol import messages as m
from kafkacore.protocol.enums import ErrorCode
from kafkacore.protocol.error_codes import (
    ConcurrentTransactionsError,
    GroupAuthorizationFailedError,
    TransactionalIdAuthorizationFailedError,
    UnknownErrorCodeError,
)
from kafkacore.timers import Deadlines
from tests.producer.fakes import RecordingSend

E = ErrorCode


@pytest.mark.parametrize(
    ("code", "transactional", "reaction"),
    [
        (E.NONE, True, Reaction.OK),
        (E.NOT_COORDINATOR, True, Reaction.RETRY),
        (E.COORDINATOR_LOAD_IN_PROGRESS, False, Reaction.RETRY),
        (E.CONCURRENT_TRANSACTIONS, True, Reaction.RETRY),
        (E.NOT_ENOUGH_REPLICAS, True, Reaction.RETRY),  # any other retriable code
        (E.PRODUCER_FENCED, True, Reaction.FENCE),
        (E.INVALID_PRODUCER_EPOCH, True, Reaction.FENCE),
        (E.INVALID_PRODUCER_EPOCH, False, Reaction.FAIL),  # no transaction to fence
        (E.TRANSACTIONAL_ID_AUTHORIZATION_FAILED, True, Reaction.FAIL),
        (E.INVALID_TXN_STATE, True, Reaction.FAIL),
        (9999, True, Reaction.FAIL),
    ],
)
def test_reaction_table(code: int, transactional: bool, reaction: Reaction) -> None:
    assert react(code, transactional) is reaction


class _Calls:
    """CoordinatorRequests over a recording send; answers are fed by hand."""

    def __init__(self, *, transactional: bool = True) -> None:
        self.send = RecordingSend()
        self.sent = self.send.sent
        self.deadlines: Deadlines[Hashable] = Deadlines()
        self.requests = CoordinatorRequests(
            self.send, self.deadlines, lambda n: float(n), transactional=transactional
        )
        self.ok: list[Any] = []
        self.failed: list[BaseException] = []
        self.noted: list[BaseException] = []
        self.fenced: list[BaseException] = []
        self.requests.on_fence = lambda e, now: self.fenced.append(e)

    def call(self, request: Any = None, **kw: Any) -> CoordinatorCall:
        target: Target = AnyNode()
        call = CoordinatorCall(
            request if request is not None else m.EndTxnRequest(),
            target,
            lambda c, r, now: self.ok.append(r),
            lambda c, e, now: self.failed.append(e),
            note=self.noted.append,
            **{"codes": error_code, **kw},
        )
        return self.requests.call(call, 0.0)

    def answer(
        self, response: Any = None, error: BaseException | None = None, now: float = 0.0
    ) -> None:
        self.send.answer(response, error, now=now)


def test_success_completes_the_call() -> None:
    c = _Calls()
    call = c.call(max_version=4)
    assert c.requests.busy and c.sent[0][2]["max_version"] == 4
    answer = m.EndTxnResponse(error_code=0)
    c.answer(answer)
    assert c.ok == [answer] and not c.requests.busy and c.requests.calls == {}
    assert call.id == 1 and call.handle is not None and call.handle.id == 1


def test_retriable_codes_retry_after_a_growing_backoff() -> None:
    c = _Calls()
    call = c.call()
    c.answer(m.EndTxnResponse(error_code=E.CONCURRENT_TRANSACTIONS), now=10.0)
    assert c.deadlines.get(("coordinator", call.id)) == 11.0 and c.requests.busy
    assert isinstance(c.noted[0], ConcurrentTransactionsError)
    c.requests.resend(call.id, 11.0)
    assert len(c.sent) == 2
    c.answer(m.EndTxnResponse(error_code=E.NOT_COORDINATOR), now=11.0)
    assert c.deadlines.get(("coordinator", call.id)) == 13.0  # second attempt: 2 s
    c.requests.resend(call.id, 13.0)
    c.answer(m.EndTxnResponse(error_code=0))
    assert len(c.ok) == 1 and call.attempts == 2


def test_lost_answers_retry_but_refused_credentials_and_refusals_do_not() -> None:
    c = _Calls()
    call = c.call()
    lost = KafkaConnectionError("connection reset")
    c.answer(error=lost, now=1.0)
    assert c.noted == [lost, lost] and ("coordinator", call.id) in c.deadlines
    c.requests.resend(call.id, 2.0)
    refused = AuthenticationError("SASL refused")
    c.answer(error=refused)
    assert c.failed == [refused] and c.requests.calls == {}
    c.call()
    denied = TransactionalIdAuthorizationFailedError("FindCoordinator refused 'tx'")
    c.answer(error=denied)
    assert c.failed == [refused, denied]


def test_a_code_that_fails_is_named_by_the_request() -> None:
    c = _Calls()
    c.call()
    c.answer(m.EndTxnResponse(error_code=E.INVALID_TXN_STATE))
    (error,) = c.failed
    assert "EndTxnRequest" in str(error) and c.noted == []
    c.call(codes=lambda r: 9999)  # unknown to this client: the broker's generic error
    c.answer(m.EndTxnResponse())
    assert len(c.failed) == 2 and c.requests.calls == {}


def test_an_unknown_code_fails_with_its_number() -> None:
    c = _Calls()
    c.call(codes=lambda r: -12345)
    c.answer(m.EndTxnResponse())
    (error,) = c.failed
    assert isinstance(error, UnknownErrorCodeError) and "-12345: EndTxnRequest" in str(error)


def test_a_call_without_note_retries_and_fails_all_the_same() -> None:
    c = _Calls()
    call = c.call()
    call.note = None
    c.answer(error=KafkaConnectionError("lost"), now=0.0)
    c.requests.resend(call.id, 1.0)
    c.answer(m.EndTxnResponse(error_code=E.NOT_COORDINATOR), now=1.0)
    c.requests.resend(call.id, 3.0)
    c.answer(error=AuthenticationError("refused"))
    assert c.noted == [] and len(c.failed) == 1 and call.attempts == 2


def test_fencing_codes_fence_a_transactional_producer() -> None:
    c = _Calls()
    c.call()
    c.answer(m.EndTxnResponse(error_code=E.PRODUCER_FENCED))
    assert len(c.fenced) == 1 and c.failed == [] and not c.requests.busy
    plain = _Calls(transactional=False)
    plain.call()
    plain.answer(m.EndTxnResponse(error_code=E.INVALID_PRODUCER_EPOCH))
    assert plain.fenced == [] and len(plain.failed) == 1


def test_busy_counts_transaction_steps_only_and_cancel_forgets_everything() -> None:
    c = _Calls()
    call = c.call(busy=False)
    assert not c.requests.busy
    c.answer(error=KafkaConnectionError("lost"), now=0.0)
    c.requests.cancel_all()
    assert c.requests.calls == {} and ("coordinator", call.id) not in c.deadlines
    c.requests.resend(call.id, 5.0)  # cancelled: nothing is sent
    c.answer(m.EndTxnResponse())  # a late answer to a cancelled call changes nothing
    assert len(c.sent) == 1 and c.ok == [] and c.failed == []


def test_group_authorization_refusal_fails_at_once() -> None:
    c = _Calls()
    c.call(request=m.TxnOffsetCommitRequest(group_id="g"))
    c.answer(error=GroupAuthorizationFailedError("group 'g'"))
    assert len(c.failed) == 1 and c.deadlines.next() is None
