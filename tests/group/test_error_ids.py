"""A group member's fatal refusal keeps the code and the coordinator's id (issue 13).

The scripted Requester answers as coordinator 7 (``Script.coordinator``):
the BrokerError behind the member's GroupFatalError carries that id, and
the message names the broker.
"""

from __future__ import annotations

from kafkacore.errors import BrokerError
from kafkacore.group.base import GroupFailed
from kafkacore.protocol import messages as m
from kafkacore.protocol.enums import ErrorCode
from tests.group.test_classic_unit import member as classic_member
from tests.group.test_kip848_unit import HB, answer
from tests.group.test_kip848_unit import stable as kip848_stable


def _failure(events: list[object]) -> tuple[BaseException, BrokerError]:
    """The member's GroupFatalError and the BrokerError behind it."""
    failed = events[-1]
    assert isinstance(failed, GroupFailed)
    cause = failed.error.__cause__
    assert isinstance(cause, BrokerError)
    return failed.error, cause


def test_a_classic_join_refusal_names_the_coordinator() -> None:
    mem, script = classic_member()
    script.coordinator = 3
    mem.subscribe(frozenset({"t"}), now=0.0)
    script.take(m.JoinGroupRequest).answer(
        m.JoinGroupResponse(error_code=ErrorCode.GROUP_AUTHORIZATION_FAILED)
    )
    error, cause = _failure(mem.pull_events())
    assert cause.code == ErrorCode.GROUP_AUTHORIZATION_FAILED and cause.node_id == 3
    assert "JoinGroup answered GROUP_AUTHORIZATION_FAILED: from broker 3;" in str(error)


def test_a_kip848_heartbeat_refusal_names_the_coordinator() -> None:
    mem, script, _ = kip848_stable(0)
    script.coordinator = 2
    mem.handle_timeout(now=2.0)
    script.take(HB).answer(
        answer(code=ErrorCode.GROUP_AUTHORIZATION_FAILED, error_message="no ACL"), 2.5
    )
    error, cause = _failure(mem.pull_events())
    assert cause.code == ErrorCode.GROUP_AUTHORIZATION_FAILED and cause.node_id == 2
    assert "(from broker 2)" in str(error)
    assert str(cause) == "GROUP_AUTHORIZATION_FAILED: no ACL (from broker 2)"
