"""kafkacore demo: start a local Kafka, talk to it, stop it.

Run with ``./dev demo``. Each step is a function taking the running broker;
add steps (produce and consume through each transport, ...) to ``STEPS``.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable

from localkafka import KAFKA_VERSION, LocalKafka, wire


def api_versions_table(kafka: LocalKafka) -> None:
    """Send ApiVersions v0 and print the broker's table next to kafkacore's own."""
    try:
        from kafkacore.protocol.api import APIS
    except ImportError:  # the codec is not there yet: show the broker's side only
        APIS = {}
    broker = sorted(wire.api_versions(kafka.host, kafka.port), key=lambda v: v.api_key)
    print(f"{'key':>4}  {'api':<32} {'broker':>8} {'kafkacore':>10} {'use':>4}")
    for v in broker:
        ours = APIS.get(v.api_key)
        name = ours.name if ours else "?"
        mine = f"{ours.min_version}-{ours.max_version}" if ours else "-"
        # Negotiated version: the highest both sides speak, never a guess.
        use = "-"
        if ours and max(v.min_version, ours.min_version) <= min(v.max_version, ours.max_version):
            use = str(min(v.max_version, ours.max_version))
        print(
            f"{v.api_key:>4}  {name:<32} {v.min_version:>3}-{v.max_version:<4} {mine:>10} {use:>4}"
        )
    print(f"{len(broker)} APIs advertised by the broker")


STEPS: list[tuple[str, Callable[[LocalKafka], None]]] = [
    ("ApiVersions: what the broker speaks", api_versions_table),
]


def main() -> int:
    print(f"Starting a local Apache Kafka {KAFKA_VERSION} broker (KRaft, 127.0.0.1) ...")
    began = time.monotonic()
    with LocalKafka(size=1) as kafka:
        print(f"Broker up at {kafka.bootstrap} in {time.monotonic() - began:.1f}s")
        for title, step in STEPS:
            print(f"\n== {title}")
            step(kafka)
        print("\nStopping the broker.")
    return 0


if __name__ == "__main__":
    sys.exit(main())
