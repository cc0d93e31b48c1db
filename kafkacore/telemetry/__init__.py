"""Client telemetry (KIP-714), sans-IO: the machine, its payload and its encoders.

:class:`TelemetryMachine` decides when to ask a broker for the client's
telemetry subscription and when to push metrics; the client core owns one
(``ClientConfig.enable_metrics_push``, on by default as in Java) and sends
its requests. See ``machine.py`` for the states, ``collect.py`` for the
metric names, ``payload.py`` for compression and the size bound,
``otlp.py`` and ``protobuf.py`` for the encoding.
"""

from kafkacore.telemetry.collect import TelemetryCollector, TelemetryRole, infer_role
from kafkacore.telemetry.machine import (
    Subscription,
    TelemetryMachine,
    TelemetryRequest,
    TelemetryState,
)

__all__ = [
    "Subscription",
    "TelemetryCollector",
    "TelemetryMachine",
    "TelemetryRequest",
    "TelemetryRole",
    "TelemetryState",
    "infer_role",
]
