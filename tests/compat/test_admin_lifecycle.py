"""An admin client dropped unclosed warns with ``ResourceWarning`` and closes its
sockets; one closed leaves no socket open (issue 21). Python's own sockets,
files and asyncio transports warn the same way: a client kept by nobody must
not keep connections (or, for the blocking one, its I/O thread) alive.

Sockets are read from ``/proc/self/fd`` (Linux): those the process has after
the client is gone must all be ones it had before the client (others may have
closed meanwhile: the shared broker's fixtures run in this process too).
"""

from __future__ import annotations

import asyncio
import gc
import os
import threading
import warnings
from typing import Any

import pytest

from kafkacore.compat.aiokafka.admin import AIOKafkaAdminClient
from kafkacore.compat.kafka import KafkaAdminClient as KafkaPythonAdminClient
from kafkacore.testing import LocalKafka
from kafkacore.transports.asyncio import AsyncKafkaAdminClient
from kafkacore.transports.selector import KafkaAdminClient

pytestmark = pytest.mark.broker


def sockets() -> set[str]:
    """The process's open sockets, by inode (``socket:[123]``)."""
    found = set()
    for fd in os.listdir("/proc/self/fd"):
        try:
            link = os.readlink(f"/proc/self/fd/{fd}")
        except OSError:  # closed while listing
            continue
        if link.startswith("socket:"):
            found.add(link)
    return found


def used(admin: Any) -> None:
    """Two calls: the first is answered on the bootstrap connection, which the
    client drops once the metadata names the broker; the second opens the
    broker's own, which stays (a socket to see)."""
    admin.list_topics()
    admin.describe_cluster()


def admin_threads() -> int:
    return sum(t.name == "kafkacore-admin" and t.is_alive() for t in threading.enumerate())


@pytest.mark.parametrize("kind", [KafkaPythonAdminClient, KafkaAdminClient])
def test_a_dropped_blocking_admin_warns_and_closes(kafka_broker: LocalKafka, kind: Any) -> None:
    before, threads = sockets(), admin_threads()
    admin = kind(bootstrap_servers=kafka_broker.bootstrap)
    used(admin)
    assert sockets() - before and admin_threads() == threads + 1
    with pytest.warns(ResourceWarning, match="Unclosed KafkaAdminClient"):
        del admin
        gc.collect()
    assert not sockets() - before and admin_threads() == threads

    closed = kind(bootstrap_servers=kafka_broker.bootstrap)
    closed.list_topics()
    closed.close()
    closed.close()  # idempotent
    assert not sockets() - before and admin_threads() == threads
    with warnings.catch_warnings():
        warnings.simplefilter("error", ResourceWarning)
        del closed
        gc.collect()


@pytest.mark.parametrize(
    ("kind", "shown"),
    [
        (AIOKafkaAdminClient, "AIOKafkaAdminClient"),
        (AsyncKafkaAdminClient, "AsyncKafkaAdminClient"),
    ],
)
def test_a_dropped_asyncio_admin_warns_and_closes(
    kafka_broker: LocalKafka, kind: Any, shown: str
) -> None:
    async def main() -> None:
        before = sockets()  # the running loop's own wake-up pair included
        admin = kind(bootstrap_servers=kafka_broker.bootstrap)
        await admin.start()
        await admin.list_topics()
        await admin.describe_cluster()  # on the broker's own connection (see used())
        assert sockets() - before
        with pytest.warns(ResourceWarning, match=f"Unclosed {shown}"):
            del admin
            gc.collect()
        await asyncio.sleep(0.05)  # aborted transports close their sockets on the loop
        assert not sockets() - before

        closed = kind(bootstrap_servers=kafka_broker.bootstrap)
        await closed.start()
        await closed.list_topics()
        await closed.close()
        assert not sockets() - before
        with warnings.catch_warnings():
            warnings.simplefilter("error", ResourceWarning)
            del closed
            gc.collect()
        never_started = kind(bootstrap_servers=kafka_broker.bootstrap)
        with warnings.catch_warnings():
            warnings.simplefilter("error", ResourceWarning)
            del never_started  # nothing opened, nothing to warn about
            gc.collect()

    asyncio.run(main())
