"""``kafkacore produce`` and ``consume`` against the shared broker: lines, keys,
JSON both ways, files, the rate limit, partitions, offsets and timestamps,
counts and ends, format strings, groups, read_committed; bad input refused."""

from __future__ import annotations

import datetime as dt
import json
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from kafkacore import KafkaAdminClient, KafkaProducer, TopicPartition
from kafkacore.admin import NewTopic
from kafkacore.testing import LocalKafka
from tests.cli.conftest import COMMAND_TIMEOUT, INTERRUPTIBLE, Cli, clean_env, run_cli

pytestmark = pytest.mark.broker


def _topic(admin: KafkaAdminClient, name: str, partitions: int = 1) -> str:
    admin.create_topics([NewTopic(name, partitions, 1)])[name].result()
    return name


def _end(admin: KafkaAdminClient, topic: str, partition: int = 0) -> int:
    from kafkacore.admin import OffsetSpec

    tp = TopicPartition(topic, partition)
    return admin.list_offsets({tp: OffsetSpec.latest()})[tp].result().offset or 0


def test_lines_keys_headers_and_formats(cli: Cli, admin: KafkaAdminClient, unique: str) -> None:
    topic = _topic(admin, f"cli-pc-{unique}", 2)
    lines = "".join(f"k{i}:v{i}\n" for i in range(10))
    sent = cli("produce", topic, "-K", ":", "-H", "source=cli", input=lines).ok()
    assert "produced 10 record(s)" in sent.err

    out = cli("consume", topic, "-e", "-f", "%p|%o|%k|%s|%h|%K|%S\\n").ok().out.splitlines()
    assert len(out) == 10
    rows = [line.split("|") for line in out]
    assert sorted(r[3] for r in rows) == sorted(f"v{i}" for i in range(10))
    assert all(r[4] == "source=cli" and r[6] == "2" for r in rows)
    # keyed records land by murmur2: the same key, the same partition, both times
    by_key = {r[2]: r[0] for r in rows}
    cli("produce", topic, "-K", ":", input="k3:again\n").ok()
    again = cli("consume", topic, "-e", "-f", "%k %p %s\\n").ok().out.splitlines()
    assert f"k3 {by_key['k3']} again" in again

    two = cli("consume", topic, "-c", "2", "-K", "=").ok().out.splitlines()
    assert len(two) == 2 and all("=" in line for line in two)


def test_json_round_trip_files_and_partition(
    cli: Cli, admin: KafkaAdminClient, unique: str, tmp_path: Path
) -> None:
    topic = _topic(admin, f"cli-json-{unique}", 3)
    records = [
        {"key": "a", "value": "text", "headers": {"h": "1"}, "partition": 2, "timestamp": 1000},
        {"key": None, "value": {"nested": [1, 2]}, "partition": 2},
        {"value": {"base64": "AAEC/w=="}, "partition": 2},
    ]
    source = tmp_path / "records.jsonl"
    source.write_text("".join(json.dumps(r) + "\n" for r in records))
    cli("produce", topic, "--json", str(source)).ok()
    got = [
        json.loads(line)
        for line in cli("consume", topic, "-p", "2", "-e", "--json").ok().out.splitlines()
    ]
    assert [g["offset"] for g in got] == [0, 1, 2]
    assert got[0]["key"] == "a" and got[0]["value"] == "text" and got[0]["timestamp"] == 1000
    assert got[0]["headers"] == {"h": "1"}
    assert json.loads(got[1]["value"]) == {"nested": [1, 2]} and got[1]["key"] is None
    assert got[2]["value"] == {"base64": "AAEC/w=="}  # not UTF-8: base64 both ways
    # consume --json's output is produce --json's input
    copy = _topic(admin, f"cli-json-copy-{unique}", 3)
    cli("produce", copy, "--json", input="".join(json.dumps(g) + "\n" for g in got)).ok()
    copied = cli("consume", copy, "-p", "2", "-e", "--json").ok().out.splitlines()
    assert [json.loads(c)["value"] for c in copied] == [g["value"] for g in got]

    plain = tmp_path / "plain.txt"
    plain.write_text("one\ntwo\n")
    cli("produce", topic, "-p", "0", str(plain), "-", input="three\n").ok()
    assert cli("consume", topic, "-p", "0", "-e").ok().out.splitlines() == ["one", "two", "three"]


def test_rate_limit(cli: Cli, admin: KafkaAdminClient, unique: str) -> None:
    topic = _topic(admin, f"cli-rate-{unique}")
    started = time.monotonic()
    cli("produce", topic, "--rate", "20", input="x\n" * 30).ok()
    # 30 records at 20/s take at least 29/20 s of pacing (plus start-up)
    assert time.monotonic() - started >= 1.45
    assert _end(admin, topic) == 30


def test_offsets_timestamps_counts(cli: Cli, admin: KafkaAdminClient, unique: str) -> None:
    topic = _topic(admin, f"cli-off-{unique}")
    # Recent timestamps: records from 1970 would be past retention and deleted at once.
    base = (int(time.time()) - 3600) * 1000
    records = "".join(
        json.dumps({"value": f"r{i}", "timestamp": base + i * 1000}) + "\n" for i in range(10)
    )
    cli("produce", topic, "--json", input=records).ok()

    def values(*args: str) -> list[str]:
        return cli("consume", topic, *args).ok().out.split()

    assert values("-o", "7", "-e") == ["r7", "r8", "r9"]
    assert values("-o", "-2", "-e") == ["r8", "r9"]
    assert values("-o", f"@{base + 4000}", "-e") == ["r4", "r5", "r6", "r7", "r8", "r9"]
    assert values("-o", f"s@{base + 8500}", "-e") == ["r9"]
    iso = dt.datetime.fromtimestamp((base + 5000) / 1000, dt.UTC).isoformat()
    assert values("-o", f"@{iso}", "-c", "2") == ["r5", "r6"]
    assert values("-o", "beginning", "-c", "3") == ["r0", "r1", "r2"]
    idle = cli("consume", topic, "-o", "end", "--idle-timeout", "1").ok()
    assert idle.out == ""


def test_group_commits_what_was_printed(cli: Cli, admin: KafkaAdminClient, unique: str) -> None:
    topic, group = _topic(admin, f"cli-grp-{unique}", 2), f"cli-g-{unique}"
    cli("produce", topic, input="".join(f"{i}\n" for i in range(20))).ok()
    first = cli("consume", topic, "-g", group, "-c", "5").ok().out.split()
    assert len(first) == 5
    committed = admin.list_consumer_group_offsets(group)
    assert sum(m.offset for m in committed.values() if m is not None) == 5
    rest = cli("consume", topic, "-g", group, "-e").ok().out.split()
    assert sorted(first + rest, key=int) == [str(i) for i in range(20)]
    latest = cli("consume", topic, "-g", f"{group}-new", "-o", "end", "--idle-timeout", "2").ok()
    assert latest.out == ""


def test_read_committed(
    cli: Cli, admin: KafkaAdminClient, kafka_broker: LocalKafka, unique: str
) -> None:
    topic = _topic(admin, f"cli-txn-{unique}")
    with KafkaProducer(kafka_broker.bootstrap, transactional_id=f"cli-txn-{unique}") as producer:
        producer.init_transactions()
        producer.begin_transaction()
        producer.send(topic, b"committed")
        producer.commit_transaction()
        producer.begin_transaction()
        producer.send(topic, b"aborted")
        producer.flush()
        producer.abort_transaction()
    assert cli("consume", topic, "-e", "--isolation", "read_committed").ok().out.split() == [
        "committed"
    ]
    assert cli("consume", topic, "-e").ok().out.split() == ["committed", "aborted"]


def test_installed_script(kafka_broker: LocalKafka, admin: KafkaAdminClient, unique: str) -> None:
    script = Path(sys.executable).parent / "kafkacore"
    topic = _topic(admin, f"cli-script-{unique}")
    run_cli(
        "-b", kafka_broker.bootstrap, "produce", topic, input="via-script\n", program=(str(script),)
    ).ok()
    got = run_cli("-b", kafka_broker.bootstrap, "consume", topic, "-e", program=(str(script),))
    assert got.ok().out == "via-script\n"
    assert run_cli("--version", program=(str(script),)).ok().out.startswith("kafkacore, version")


def test_bad_input(cli: Cli, admin: KafkaAdminClient, unique: str) -> None:
    topic = _topic(admin, f"cli-bad-{unique}", 2)
    missing = f"cli-missing-{unique}"
    for args in (("produce", missing), ("consume", missing, "-e")):
        result = cli(*args, input="x\n")
        assert (
            result.code == 3
            and "UNKNOWN_TOPIC_OR_PARTITION" in result.err
            and missing in result.err
        )
    assert missing not in admin.list_topics()

    offset = cli("consume", topic, "-o", "yesterday")
    assert offset.code == 2 and "bad offset spec 'yesterday'" in offset.err
    fmt = cli("consume", topic, "-f", "%x")
    assert fmt.code == 2 and "unknown token %x" in fmt.err
    partition = cli("consume", topic, "-p", "5", "-e")
    assert partition.code == 3 and "no partition 5" in partition.err
    assert cli("consume", topic, "-g", "g", "-o", "5").code == 2
    assert cli("consume", topic, "-o", "stored").code == 2

    for lines, message in (
        ('{"value": "ok"\n', "not JSON"),
        ('["a"]\n', "expected a JSON object"),
        ('{"valeu": "x"}\n', "unknown field(s) valeu"),
        ('{"value": "x", "partition": 9}\n', "no partition 9"),
    ):
        result = cli("produce", topic, "--json", input=lines)
        assert result.code in (2, 3) and message in result.err, (lines, result)
    no_sep = cli("produce", topic, "-K", ":", input="no-separator\n")
    assert no_sep.code == 2 and "no key separator" in no_sep.err
    assert cli("produce", topic, "-p", "2", input="x\n").code == 3
    assert _end(admin, topic, 0) == 0 and _end(admin, topic, 1) == 0  # nothing was sent


def test_reader_gone_ends_quietly(
    kafka_broker: LocalKafka, admin: KafkaAdminClient, unique: str
) -> None:
    topic = _topic(admin, f"cli-pipe-{unique}")
    with KafkaProducer(kafka_broker.bootstrap) as producer:
        producer.send_many(topic, [(None, b"x" * 100)] * 20_000).result()
    base = [sys.executable, "-m", "kafkacore.transports.cli", "-b", kafka_broker.bootstrap]
    # `kafkacore consume t | head -1`: the reader leaves, the consumer ends quietly with 0
    proc = subprocess.Popen(
        [*base, "consume", topic], stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=clean_env()
    )
    assert proc.stdout is not None and proc.stderr is not None
    assert proc.stdout.readline() == b"x" * 100 + b"\n"  # b"" if it ended first
    proc.stdout.close()
    assert proc.wait(timeout=COMMAND_TIMEOUT) == 0
    assert b"Error" not in proc.stderr.read()


@pytest.mark.parametrize("inherited", ["default", "ignored"])
def test_interrupt_while_following_a_group(
    kafka_broker: LocalKafka, admin: KafkaAdminClient, unique: str, inherited: str
) -> None:
    """Ctrl-C while following a group: status 130, said on stderr. ``ignored``:
    the test run itself was started in the background (SIGINT ignored, passed
    on to children), which lost the interrupt before issue 25."""
    topic, group = _topic(admin, f"cli-sig-{unique}"), f"cli-sig-g-{unique}"
    with KafkaProducer(kafka_broker.bootstrap) as producer:
        producer.send_many(topic, [(None, b"x" * 100)] * 2_000).result()
    # What the child inherits: a handler becomes SIG_DFL at exec, SIG_IGN stays.
    handler = signal.SIG_IGN if inherited == "ignored" else signal.default_int_handler
    before = signal.signal(signal.SIGINT, handler)
    try:
        proc = subprocess.Popen(
            [*INTERRUPTIBLE, "-b", kafka_broker.bootstrap, "consume", topic, "-g", group],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            env=clean_env(),
        )
    finally:
        signal.signal(signal.SIGINT, before)
    assert proc.stderr is not None
    try:
        # Until it has consumed and committed something, or ended (then say why);
        # bounded as one command, for a process that neither commits nor ends.
        deadline = time.monotonic() + COMMAND_TIMEOUT
        while proc.poll() is None and not admin.list_consumer_group_offsets(group):
            assert time.monotonic() < deadline, "kafkacore consume -g committed nothing"
            time.sleep(0.2)
        assert proc.poll() is None, f"ended with {proc.returncode}: {proc.stderr.read()!r}"
        proc.send_signal(signal.SIGINT)
        assert proc.wait(timeout=COMMAND_TIMEOUT) == 130
        assert b"kafkacore: interrupted" in proc.stderr.read()
    finally:
        if proc.poll() is None:
            proc.kill()  # a failed test leaves no consumer behind
            proc.wait()
