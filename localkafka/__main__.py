"""Command line: ``python -m kafkacore.testing`` or the ``localkafka`` script.

Subcommands:

* ``libs``: resolve (if needed) and print the cached jar directory;
* ``start [--nodes N] [--listeners ...] [--authorizer] [--profile P] [--proxy
  [--faults cut=0.2,delay=0.1,stall=0.05,drop=0.05] [--seed N]]``: start
  brokers (``--proxy``: each behind a fault-injecting proxy), print how to
  reach them, run until Ctrl-C or SIGTERM, then stop;
* ``probe HOST:PORT``: print a broker's ApiVersions table;
* ``reap``: kill JVMs left behind by dead localkafka owners.
"""

from __future__ import annotations

import argparse
import signal
import sys
import tempfile
import threading
import time
from collections.abc import Sequence
from pathlib import Path

from kafkacore.testing import wire
from kafkacore.testing.cluster import LocalKafka
from kafkacore.testing.config import ALL_LISTENERS, CLIENT_LISTENERS, Profile
from kafkacore.testing.libs import ensure_libs
from kafkacore.testing.process import reap_stale, reap_stale_workdirs
from kafkacore.testing.proxy import FaultMix


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="localkafka", description="Local Apache Kafka for kafkacore.")
    sub = p.add_subparsers(dest="command", required=True)
    sub.add_parser("libs", help="resolve and print the Kafka jar directory")
    start = sub.add_parser("start", help="start brokers and run until interrupted")
    start.add_argument("--nodes", type=int, default=1, help="1 (default) or more combined nodes")
    start.add_argument(
        "--listeners",
        default="PLAINTEXT",
        help=f"comma list among {','.join(ALL_LISTENERS)}, or 'all' (the first four; "
        "default PLAINTEXT)",
    )
    start.add_argument(
        "--proxy", action="store_true", help="put a fault-injecting proxy in front of every node"
    )
    start.add_argument(
        "--faults",
        default="",
        help="with --proxy: per-connection fault probabilities, e.g. cut=0.2,delay=0.1,"
        "stall=0.05,drop=0.05 (default: none, a pass-through)",
    )
    start.add_argument("--seed", type=int, default=0, help="with --proxy: the faults' seed")
    start.add_argument("--authorizer", action="store_true", help="enable StandardAuthorizer")
    start.add_argument("--profile", choices=[p.value for p in Profile], default=Profile.TEST.value)
    start.add_argument("--keep", action="store_true", help="keep the work directory")
    probe = sub.add_parser("probe", help="print a broker's ApiVersions table")
    probe.add_argument("address", help="HOST:PORT of a PLAINTEXT listener")
    sub.add_parser("reap", help="kill JVMs left behind by dead owners")
    return p


def _listeners(spec: str) -> tuple[str, ...]:
    if spec == "all":
        return CLIENT_LISTENERS
    names = tuple(s.strip().upper() for s in spec.split(",") if s.strip())
    return names if "PLAINTEXT" in names else ("PLAINTEXT", *names)


def parse_faults(spec: str) -> FaultMix:
    """``cut=0.2,delay=0.1`` -> FaultMix; ValueError naming what is wrong."""
    fields: dict[str, float] = {}
    for item in (s.strip() for s in spec.split(",") if s.strip()):
        name, sep, value = item.partition("=")
        if not sep or name not in ("cut", "delay", "stall", "drop"):
            raise ValueError(f"--faults: {item!r} is not one of cut=, delay=, stall=, drop=")
        fields[name] = float(value)
    return FaultMix(
        cut=fields.get("cut", 0.0),
        delay=fields.get("delay", 0.0),
        stall=fields.get("stall", 0.0),
        drop=fields.get("drop", 0.0),
    )


def print_api_versions(host: str, port: int) -> None:
    versions = wire.api_versions(host, port)
    print(f"{'api key':>7}  {'min':>3}  {'max':>3}")
    for v in sorted(versions, key=lambda v: v.api_key):
        print(f"{v.api_key:>7}  {v.min_version:>3}  {v.max_version:>3}")


def _start(args: argparse.Namespace) -> int:
    stop = threading.Event()

    def on_signal(signum: int, frame: object) -> None:
        stop.set()

    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGINT, on_signal)
    mix = parse_faults(args.faults)
    began = time.monotonic()
    kafka = LocalKafka(
        size=args.nodes,
        listeners=_listeners(args.listeners),
        authorizer=args.authorizer,
        profile=Profile(args.profile),
        keep_workdir=args.keep,
        proxy=args.proxy,
    )
    with kafka:
        for i, proxy in enumerate(kafka.proxies):
            proxy.set_mix(mix, seed=args.seed + i)
        print(f"localkafka: {args.nodes} node(s) up in {time.monotonic() - began:.1f}s")
        print(f"bootstrap (PLAINTEXT): {kafka.bootstrap}")
        for name in kafka.listener_names[1:]:
            print(f"bootstrap ({name}): {kafka.bootstrap_for(name)}")
        if kafka.proxies:
            print(f"bootstrap (through the fault proxies, {mix}): {kafka.proxy_bootstrap}")
        if kafka.ca_file is not None:
            print(f"CA file: {kafka.ca_file}")
        if kafka.client_cert is not None and "MTLS" in kafka.listener_names:
            print(f"client certificate (MTLS): {kafka.client_cert}, key {kafka.client_key}")
        print("users: " + ", ".join(f"{u}/{p}" for u, p in kafka.users.items()))
        for node in kafka.nodes:
            print(f"node {node.node_id}: pid {node.pid}, log {node.log_path}")
        print("Ctrl-C stops.", flush=True)
        stop.wait()
        for proxy in kafka.proxies:
            print(f"proxy {proxy.name}: {proxy.stats}")
        print("localkafka: stopping", flush=True)
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    if args.command == "libs":
        print(ensure_libs())
        return 0
    if args.command == "reap":
        killed = reap_stale()
        removed = reap_stale_workdirs(Path(tempfile.gettempdir()))
        print(f"localkafka: killed {len(killed)} stale process(es) {killed}")
        print(f"localkafka: removed {len(removed)} stale work dir(s)")
        return 0
    if args.command == "probe":
        host, _, port = args.address.rpartition(":")
        print_api_versions(host or "127.0.0.1", int(port))
        return 0
    return _start(args)


if __name__ == "__main__":
    sys.exit(main())
