"""The bridge between a core and a transport's I/O keeps every fact.

A fact (bytes a socket delivered, a connection lost) fed while another is
being applied is queued; when the call being applied, or a handler of the
events it produced, raises, the queued facts must still reach the core, and
the error the caller of the outermost feed.
"""

from __future__ import annotations

from collections.abc import Sequence

import pytest

from kafkacore.client.driver import Action, ConnId, OpenConnection
from kafkacore.transports._bridge import Bridge


class RecordingCore:
    """A core that records its facts and emits one event per fact."""

    def __init__(self) -> None:
        self.facts: list[object] = []
        self._events: list[object] = []

    def data_received(self, conn_id: ConnId, data: bytes, *, now: float) -> None:
        self.facts.append(bytes(data))
        self._events.append(bytes(data))

    def connection_lost(self, conn_id: ConnId, error: BaseException | None, *, now: float) -> None:
        self.facts.append(("lost", conn_id))

    def pull_actions(self) -> list[Action]:
        return []

    def pull_events(self) -> Sequence[object]:
        events, self._events = self._events, []
        return events

    def next_deadline(self) -> float | None:
        return None


class NoIo:
    deadlines: list[float | None]

    def __init__(self) -> None:
        self.deadlines = []

    def open(self, action: OpenConnection) -> None:
        raise AssertionError("nothing to open")

    def write(self, conn_id: ConnId, data: bytes | bytearray | memoryview) -> None:
        raise AssertionError("nothing to write")

    def close(self, conn_id: ConnId) -> None:
        raise AssertionError("nothing to close")

    def set_deadline(self, deadline: float | None) -> None:
        self.deadlines.append(deadline)


def make(on_event: object) -> tuple[Bridge, RecordingCore, NoIo]:
    core, io = RecordingCore(), NoIo()
    bridge = Bridge(core, io, clock=lambda: 0.0, on_event=on_event)  # type: ignore[arg-type]
    return bridge, core, io


CONN = ConnId(1)


def test_facts_queued_behind_a_raising_event_handler_still_reach_the_core() -> None:
    bridge: Bridge

    def on_event(event: object) -> None:
        if event == b"first":
            # A handler that feeds (as a router does), then fails (user code).
            bridge.feed_data(CONN, b"second")
            bridge.feed_lost(CONN, None)
            raise RuntimeError("a bug in a callback")

    bridge, core, io = make(on_event)
    with pytest.raises(RuntimeError, match="a bug in a callback"):
        bridge.feed_data(CONN, b"first")
    assert core.facts == [b"first", b"second", ("lost", CONN)]
    assert io.deadlines == [None]  # the timer is still re-armed


def test_a_raising_command_does_not_lose_the_events_after_it_or_the_next_feed() -> None:
    seen: list[object] = []
    bridge, core, _ = make(seen.append)

    def boom(now: float) -> None:
        bridge.feed_data(CONN, b"queued")
        raise ValueError("refused locally")

    with pytest.raises(ValueError, match="refused locally"):
        bridge.command(boom)
    assert core.facts == [b"queued"] and seen == [b"queued"]
    bridge.feed_data(CONN, b"later")  # the bridge is not left busy
    assert core.facts == [b"queued", b"later"] and seen == [b"queued", b"later"]


def test_the_first_of_several_errors_is_raised() -> None:
    def on_event(event: object) -> None:
        raise KeyError(event)

    bridge, core, _ = make(on_event)
    with pytest.raises(KeyError, match="one"):
        bridge.command(lambda now: (bridge.feed_data(CONN, b"one"), bridge.feed_data(CONN, b"two")))
    assert core.facts == [b"one", b"two"]
