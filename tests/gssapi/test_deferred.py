"""Kerberos steps made off the core (defer_credentials) against a real KDC and broker.

The client core runs with ``defer_credentials=True``: every GSSAPI step
(the KDC round trip included) comes out as a ``CredentialsNeeded`` event,
is made on a worker thread by ``kafkacore.transports._credentials.fulfil_in_thread``
and answered back on the driving thread, as the selector transport would.
"""

from __future__ import annotations

import queue
import random
import time

from kafkacore.client import ClientConfig, KafkaClientCore
from kafkacore.client.credentials import CredentialKind
from kafkacore.client.events import CredentialsNeeded
from kafkacore.testing.cluster import LocalKafka
from kafkacore.testing.kerberos import LocalKdc
from kafkacore.transports._credentials import CredentialsAnswer, answer, fulfil_in_thread
from kafkacore.transports._gssapi import kerberos_mechanism_factory
from tests.client.socketpump import SocketPump


def test_gssapi_steps_are_made_by_the_transport(
    kafka_gssapi_broker: LocalKafka, kafka_kdc: LocalKdc
) -> None:
    config = ClientConfig(
        bootstrap_servers=kafka_gssapi_broker.bootstrap_for("SASL_PLAINTEXT"),
        security_protocol="SASL_PLAINTEXT",
        sasl_mechanism="GSSAPI",
        sasl_mechanism_factory=kerberos_mechanism_factory(
            keytab=str(kafka_kdc.keytab("client")),
            principal=kafka_kdc.principal("client"),
            domain_name="localhost",
        ),
        defer_credentials=True,
    )
    core = KafkaClientCore(config, now=time.monotonic(), rng=random.Random(0))
    pump = SocketPump(core)
    replies: queue.Queue[CredentialsAnswer] = queue.Queue()
    asked: dict[int, CredentialsNeeded] = {}

    def progress() -> bool:
        for event in pump.events:
            if isinstance(event, CredentialsNeeded) and event.request_id not in asked:
                asked[event.request_id] = event
                fulfil_in_thread(event, replies.put)
        while not replies.empty():
            assert answer(core, replies.get(), now=time.monotonic())
        return core.cluster.update_count > 0

    try:
        pump.run(progress, timeout=60)
    finally:
        pump.close()
    assert asked and all(e.kind is CredentialKind.SASL_STEP for e in asked.values())
    assert {e.mechanism for e in asked.values()} == {"GSSAPI"}
    assert core.authentication_error is None
