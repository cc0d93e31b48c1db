"""Wakeups: the client core's named deadlines; CredentialsDesk: who waits for which answer."""

from __future__ import annotations

import random

from kafkacore.client.config import ClientConfig
from kafkacore.client.connection import BrokerConnection
from kafkacore.client.credentials import CredentialKind, CredentialsCall
from kafkacore.client.credentials_desk import CredentialsDesk
from kafkacore.client.events import CredentialsNeeded
from kafkacore.client.metrics import Counters
from kafkacore.client.outputs import Outputs
from kafkacore.client.wakeups import QUEUE, STEP, Wakeups


def test_arm_sets_and_cancels_a_named_deadline() -> None:
    w = Wakeups()
    w.arm(QUEUE, 5.0)
    assert w.get(QUEUE) == 5.0 and w.next() == 5.0
    w.arm(QUEUE, None)
    assert QUEUE not in w and w.next() is None


def test_connections_have_a_key_each_and_go_when_gone() -> None:
    w = Wakeups()
    w.connection(1, 3.0)
    w.connection(2, 2.0)
    assert w.next() == 2.0 and w.get(("conn", 1)) == 3.0
    w.connection(2, None)
    assert w.next() == 3.0 and ("conn", 2) not in w


def test_step_due_is_the_step_key() -> None:
    w = Wakeups()
    assert not w.step_due
    w.set_earliest(STEP, 1.0)
    assert w.step_due and w.pop_due(1.0) == [STEP] and not w.step_due


def _conn() -> BrokerConnection:
    conn = BrokerConnection(
        conn_id=7,
        node_id=1,
        lane="default",
        host="h",
        port=1,
        config=ClientConfig(),
        rng=random.Random(0),
        now=0.0,
    )
    conn.credentials_deadline = 9.0
    return conn


def test_the_desk_numbers_requests_and_forgets_a_closed_connections() -> None:
    out = Outputs(Counters("kafkacore"))
    desk = CredentialsDesk(out)
    conn = _conn()
    need = CredentialsCall(
        kind=CredentialKind.OAUTH_TOKEN, mechanism="OAUTHBEARER", call=lambda: None
    )
    desk.ask(conn, need)
    desk.ask(conn, need)
    first, second = out.take_events()
    assert isinstance(first, CredentialsNeeded) and isinstance(second, CredentialsNeeded)
    assert (first.request_id, second.request_id) == (1, 2) and first.deadline == 9.0
    assert desk.answered(1) == 7 and desk.answered(1) is None  # answered once
    desk.forget(7)
    assert desk.answered(2) is None  # the connection closed: the late answer is ignored
