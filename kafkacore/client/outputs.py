"""What the client core has to say, shared by the core and its sub-machines.

The client core is a facade over small machines (the connection pool, the
metadata refresh, the coordinator lookups, the request dispatch). They all
report through one :class:`Outputs`: the ordered actions for the transport,
the ordered events for the user layer, the counters and the trace hooks. One
sink keeps the order of actions and events exactly the order in which the
machines produced them, whichever machine that was.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping

from kafkacore.client.driver import Action
from kafkacore.client.events import ClientEvent
from kafkacore.client.metrics import Counters

__all__ = ["Outputs", "TraceHook"]

#: ``trace(name, fields)``: called synchronously at notable points.
TraceHook = Callable[[str, Mapping[str, object]], None]


class Outputs:
    """Actions, events, counters and trace hooks of one client core."""

    __slots__ = ("actions", "counters", "events", "traces")

    def __init__(self, counters: Counters, traces: tuple[TraceHook, ...] = ()) -> None:
        self.actions: list[Action] = []
        self.events: list[ClientEvent] = []
        self.counters = counters
        self.traces = traces

    def act(self, action: Action) -> None:
        self.actions.append(action)

    def emit(self, event: ClientEvent) -> None:
        self.events.append(event)

    def trace(self, name: str, **fields: object) -> None:
        for hook in self.traces:
            hook(name, fields)

    def take_actions(self) -> list[Action]:
        out, self.actions = self.actions, []
        return out

    def take_events(self) -> list[ClientEvent]:
        out, self.events = self.events, []
        return out
