"""``kafkacore perf`` reports Java's figures; progress is a redrawn bar on a real
terminal (a pty) and plain lines on a pipe."""

from __future__ import annotations

import fcntl
import json
import os
import pty
import re
import struct
import subprocess
import sys
import termios
import threading
import time

import pytest

from kafkacore import KafkaAdminClient
from kafkacore.admin import NewTopic
from kafkacore.testing import LocalKafka
from tests.cli.conftest import COMMAND_TIMEOUT, Cli, clean_env

pytestmark = pytest.mark.broker

JAVA_PRODUCER_LINE = re.compile(
    r"^(\d+) records sent, [\d.]+ records/sec \([\d.]+ MB/sec\), [\d.]+ ms avg latency, "
    r"[\d.]+ ms max latency, \d+ ms 50th, \d+ ms 95th, \d+ ms 99th, \d+ ms 99\.9th\.$"
)
JAVA_WINDOW_LINE = re.compile(
    r"^\d+ records sent, [\d.]+ records/sec \([\d.]+ MB/sec\), [\d.]+ ms avg latency, "
    r"[\d.]+ ms max latency\.$"
)
JAVA_CONSUMER_HEADER = (
    "start.time, end.time, data.consumed.in.MB, MB.sec, data.consumed.in.nMsg, nMsg.sec, "
    "rebalance.time.ms, fetch.time.ms, fetch.MB.sec, fetch.nMsg.sec"
)


@pytest.fixture
def topic(admin: KafkaAdminClient, unique: str) -> str:
    name = f"cli-perf-{unique}"
    admin.create_topics([NewTopic(name, 2, 1)])[name].result()
    return name


def test_perf_produce_and_consume(cli: Cli, topic: str) -> None:
    report = json.loads(cli("perf", "produce", topic, "-n", "5000", "-s", "200", "--json").ok().out)
    assert report["records"] == 5000 and report["records_per_sec"] > 0
    assert report["mb_per_sec"] == pytest.approx(report["records_per_sec"] * 200 / 2**20)
    latencies = [report[k] for k in ("p50_ms", "p95_ms", "p99_ms", "p999_ms", "max_latency_ms")]
    assert latencies[0] > 0 and latencies == sorted(latencies)
    assert report["avg_latency_ms"] <= report["max_latency_ms"]

    text = cli("perf", "produce", topic, "-n", "1000").ok().out.splitlines()
    assert JAVA_PRODUCER_LINE.match(text[-1]) and text[-1].startswith("1000 records sent")

    consumed = cli("perf", "consume", topic, "-m", "6000").ok().out.splitlines()
    assert consumed[0] == JAVA_CONSUMER_HEADER
    values = dict(zip(JAVA_CONSUMER_HEADER.split(", "), consumed[1].split(", "), strict=True))
    assert int(values["data.consumed.in.nMsg"]) == 6000
    assert float(values["data.consumed.in.MB"]) == pytest.approx(
        (5000 * 200 + 1000 * 100) / 2**20, abs=1e-4
    )
    as_json = json.loads(cli("perf", "consume", topic, "-m", "100", "--json").ok().out)
    assert as_json["data.consumed.in.nMsg"] == 100


def test_perf_throttle_and_windows(cli: Cli, topic: str) -> None:
    started = time.monotonic()
    out = cli("perf", "produce", topic, "-n", "1500", "-t", "1000", "--reporting-interval", "0.4")
    lines = out.ok().out.splitlines()
    assert time.monotonic() - started >= 1.45  # 1500 records at 1000/s
    windows = [line for line in lines[:-1] if JAVA_WINDOW_LINE.match(line)]
    assert len(windows) >= 2 and len(windows) == len(lines) - 1
    summary = JAVA_PRODUCER_LINE.match(lines[-1])
    assert summary and int(summary.group(1)) == 1500
    assert "\r" not in out.err and "sent: 1500/1500 records" in out.err


def test_perf_bad_input(cli: Cli, topic: str, unique: str) -> None:
    missing = cli("perf", "produce", f"nope-{unique}", "-n", "10")
    assert missing.code == 3 and "UNKNOWN_TOPIC_OR_PARTITION" in missing.err
    assert cli("perf", "produce", topic, "-n", "10", "-t", "0").code == 2
    assert cli("perf", "produce", topic).code == 2  # --num-records is required
    empty = cli("perf", "consume", topic, "-m", "5", "--timeout", "1")
    assert empty.code == 1 and "no record for 1 s; consumed 0 of 5" in empty.err


def _on_pty(args: list[str], *, stdout_too: bool) -> tuple[int, str, str]:
    """Run with stderr (and stdout if ``stdout_too``) on a new pseudo-terminal."""
    master, slave = pty.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 40, 120, 0, 0))
    proc = subprocess.Popen(
        [sys.executable, "-m", "kafkacore.transports.cli", *args],
        stdin=subprocess.DEVNULL,
        stdout=slave if stdout_too else subprocess.PIPE,
        stderr=slave,
        env=clean_env(),
    )
    os.close(slave)
    seen = bytearray()

    def drain() -> None:
        while True:
            try:
                chunk = os.read(master, 65536)
            except OSError:  # EIO: the child closed its end
                return
            if not chunk:
                return
            seen.extend(chunk)

    reader = threading.Thread(target=drain, daemon=True)
    reader.start()
    stdout = b"" if stdout_too else proc.communicate(timeout=COMMAND_TIMEOUT)[0]
    code = proc.wait(timeout=COMMAND_TIMEOUT)
    reader.join(timeout=10)
    os.close(master)
    return code, seen.decode(errors="replace"), stdout.decode()


def test_progress_bar_on_a_terminal(
    kafka_broker: LocalKafka, cli: Cli, admin: KafkaAdminClient, topic: str, unique: str
) -> None:
    b = ["-b", kafka_broker.bootstrap]
    code, terminal, stdout = _on_pty(
        [*b, "perf", "produce", topic, "-n", "20000", "-s", "10"], stdout_too=False
    )
    assert code == 0
    assert "\r" in terminal and "sent" in terminal and "100%" in terminal
    assert re.search(r"\[#+-*\]", terminal)  # click's bar
    assert "20000/20000" in terminal
    assert JAVA_PRODUCER_LINE.match(stdout.strip())  # the report itself stays on stdout
    assert not any(JAVA_WINDOW_LINE.match(line) for line in stdout.splitlines())

    # consume -c N: the bar on the terminal, the records on stdout (a pipe)
    code, terminal, stdout = _on_pty([*b, "consume", topic, "-c", "3000"], stdout_too=False)
    assert code == 0 and len(stdout.splitlines()) == 3000
    assert "consumed" in terminal and "3000/3000" in terminal and "\r" in terminal

    # records on the same terminal: no bar to garble them
    code, terminal, _ = _on_pty([*b, "consume", topic, "-c", "5", "-f", "rec\\n"], stdout_too=True)
    assert code == 0 and terminal.count("rec") == 5 and "consumed" not in terminal

    # on a pipe the same command prints one plain line, never a carriage return
    piped = cli("consume", topic, "-c", "3000")
    assert piped.ok().err == "consumed: 3000/3000 records\n"

    # a reset over more than 50 partitions: a bar too
    wide = f"cli-wide-pty-{unique}"
    admin.create_topics([NewTopic(wide, 60, 1)])[wide].result()
    code, terminal, _ = _on_pty(
        [*b, "groups", "reset-offsets", f"g-{unique}", "-t", wide, "--to-latest", "--execute"],
        stdout_too=False,
    )
    assert code == 0 and "reset" in terminal and "60/60" in terminal and "100%" in terminal
