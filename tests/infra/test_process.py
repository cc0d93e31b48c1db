"""No child JVM outlives its owner: each safety net tested on its own.

Stand-in children are small Python processes (cheap), started through the
same ``ManagedProcess`` and carrying the same owner tag as the JVMs.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from kafkacore.testing import LocalKafka, StartError, wire
from kafkacore.testing.process import OWNER_FLAG, ManagedProcess, owner_tag, reap_stale

SLEEPER = "import time; print('ready', flush=True); time.sleep(600)"


def gone(pid: int) -> bool:
    """True once ``pid`` has exited (a zombie waiting for its reaper counts)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return True
    return stat.rsplit(")", 1)[1].split()[0] in ("Z", "X")


def wait_gone(pid: int, bound: float = 30.0) -> None:
    deadline = time.monotonic() + bound
    while not gone(pid):
        assert time.monotonic() < deadline, f"pid {pid} is still running"
        time.sleep(0.05)


def owner_script(tmp_path: Path, then: str) -> subprocess.Popen[str]:
    """Start a Python owner that spawns a tagged sleeper, prints its pid, then runs ``then``."""
    code = textwrap.dedent(
        f"""
        import sys, time
        from pathlib import Path
        from kafkacore.testing.process import ManagedProcess, owner_tag
        child = ManagedProcess(
            [sys.executable, "-c", {SLEEPER!r}, owner_tag()],
            log_path=Path({str(tmp_path / "child.log")!r}),
            cwd=Path({str(tmp_path)!r}),
        )
        print(child.pid, flush=True)
        {then}
        """
    )
    return subprocess.Popen(
        [sys.executable, "-c", code], stdout=subprocess.PIPE, text=True, cwd=tmp_path
    )


def child_pid(owner: subprocess.Popen[str]) -> int:
    assert owner.stdout is not None
    line = owner.stdout.readline()
    assert line.strip().isdigit(), f"owner printed {line!r}"
    return int(line)


def test_sigkilled_owner_takes_its_child_along(tmp_path: Path) -> None:
    owner = owner_script(tmp_path, "time.sleep(600)")
    pid = child_pid(owner)
    assert not gone(pid)
    owner.kill()  # SIGKILL: no atexit, no handler; only PR_SET_PDEATHSIG can act
    owner.wait()
    wait_gone(pid)


def test_sigterm_to_owner_kills_child_and_owner_dies_by_sigterm(tmp_path: Path) -> None:
    owner = owner_script(tmp_path, "time.sleep(600)")
    pid = child_pid(owner)
    owner.send_signal(signal.SIGTERM)
    assert owner.wait(30) == -signal.SIGTERM
    wait_gone(pid)


def test_owner_exiting_without_stop_kills_child_at_exit(tmp_path: Path) -> None:
    owner = owner_script(tmp_path, "sys.exit(3)")
    pid = child_pid(owner)
    assert owner.wait(30) == 3
    wait_gone(pid)


def test_reaper_kills_children_of_dead_owners_only(tmp_path: Path) -> None:
    dead = subprocess.run(
        [sys.executable, "-c", "import os; print(os.getpid())"],
        capture_output=True,
        text=True,
        check=True,
    )
    dead_tag = f"{OWNER_FLAG}{int(dead.stdout)}:1"
    orphan = subprocess.Popen([sys.executable, "-c", SLEEPER, dead_tag], stdout=subprocess.PIPE)
    mine = subprocess.Popen([sys.executable, "-c", SLEEPER, owner_tag()], stdout=subprocess.PIPE)
    try:
        for p in (orphan, mine):
            assert p.stdout is not None and p.stdout.readline() == b"ready\n"
        killed = reap_stale()
        assert orphan.pid in killed
        assert mine.pid not in killed
        assert orphan.wait(30) == -signal.SIGKILL
        assert mine.poll() is None
    finally:
        for p in (orphan, mine):
            p.kill()
            p.wait()


def test_stop_escalates_to_sigkill_when_sigterm_is_ignored(tmp_path: Path) -> None:
    stubborn = (
        "import signal, time; signal.signal(signal.SIGTERM, signal.SIG_IGN); "
        "print('ready', flush=True); time.sleep(600)"
    )
    log = tmp_path / "stubborn.log"
    proc = ManagedProcess([sys.executable, "-c", stubborn, owner_tag()], log_path=log, cwd=tmp_path)
    deadline = time.monotonic() + 30
    while b"ready" not in log.read_bytes():
        assert time.monotonic() < deadline
        time.sleep(0.05)
    assert proc.stop(timeout=0.5) == -signal.SIGKILL
    assert gone(proc.pid)


def test_failed_start_raises_with_the_cause_from_the_log() -> None:
    kafka = LocalKafka(
        listeners=("PLAINTEXT", "SSL"),
        overrides={"ssl.keystore.location": "/nonexistent/keystore.pem"},
        start_timeout=90,
    )
    with pytest.raises(StartError) as info:
        kafka.start()
    text = str(info.value)
    assert "JVM exited" in text
    assert "/nonexistent/keystore.pem" in text
    assert not kafka.workdir.exists()  # cleaned up even though start failed
    assert all(n.exited() is not None for n in kafka.nodes)


def test_port_taken_before_the_broker_binds_is_retried(monkeypatch: pytest.MonkeyPatch) -> None:
    import socket

    from kafkacore.testing import config

    squatter = socket.socket()
    squatter.bind(("127.0.0.1", 0))
    squatter.listen()
    taken = squatter.getsockname()[1]
    real = config.free_ports
    calls = []

    def first_call_hands_out_a_taken_port(n: int) -> list[int]:
        ports = real(n)
        calls.append(n)
        return [taken, *ports[1:]] if len(calls) == 1 else ports

    monkeypatch.setattr(config, "free_ports", first_call_hands_out_a_taken_port)
    try:
        with LocalKafka() as kafka:
            assert len(calls) == 2
            assert kafka.port != taken
            assert kafka.nodes[0].answers()
    finally:
        squatter.close()


def test_every_tagged_process_of_ours_is_registered(kafka_broker: LocalKafka) -> None:
    """Each live process carrying this process's tag is one the nets know about."""
    from kafkacore.testing import process

    tag = owner_tag().encode()
    ours = set()
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit() and int(entry.name) != os.getpid():
            try:
                argv = (entry / "cmdline").read_bytes().split(b"\0")
            except OSError:
                continue
            if tag in argv and not gone(int(entry.name)):
                ours.add(int(entry.name))
    assert kafka_broker.nodes[0].pid in ours
    assert ours == {p.pid for p in process._live}


def test_cli_start_serves_until_sigterm_then_leaves_nothing() -> None:
    cli = subprocess.Popen(
        [sys.executable, "-m", "kafkacore.testing", "start"],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    assert cli.stdout is not None
    lines = []
    for line in cli.stdout:
        lines.append(line)
        if line.startswith("Ctrl-C stops."):
            break
    text = "".join(lines)
    bootstrap = next(ln.split(": ", 1)[1].strip() for ln in lines if "(PLAINTEXT)" in ln)
    node_pid = int(next(ln for ln in lines if ln.startswith("node 1:")).split()[3].rstrip(","))
    host, _, port = bootstrap.rpartition(":")
    assert any(v.api_key == 18 for v in wire.api_versions(host, int(port))), text
    cli.send_signal(signal.SIGTERM)
    assert cli.wait(60) == 0
    assert "localkafka: stopping" in cli.stdout.read()
    wait_gone(node_pid)


def test_workdirs_of_dead_owners_are_removed(tmp_path: Path) -> None:
    from kafkacore.testing.process import OWNER_FILE, mark_workdir, reap_stale_workdirs

    dead = subprocess.run(
        [sys.executable, "-c", "import os; print(os.getpid())"],
        capture_output=True,
        text=True,
        check=True,
    )
    orphan, mine, unmarked = (tmp_path / f"localkafka-{n}" for n in ("a", "b", "c"))
    for d in (orphan, mine, unmarked):
        d.mkdir()
    (orphan / OWNER_FILE).write_text(f"{int(dead.stdout)}:1")
    mark_workdir(mine)
    assert reap_stale_workdirs(tmp_path) == [orphan]
    assert not orphan.exists()
    assert mine.exists() and unmarked.exists()
