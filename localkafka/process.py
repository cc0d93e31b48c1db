"""Child JVMs that never outlive the Python process that started them.

Theory of operation: every JVM localkafka starts is tagged on its command
line with ``-Dlocalkafka.owner=<pid>:<start-ticks>`` (the owner's pid and its
start time from ``/proc``, so a recycled pid is not mistaken for the owner).
Four independent nets then make sure no JVM is left behind:

1. normal teardown: ``stop()`` sends SIGTERM to the JVM's process group (it is
   a session leader) and SIGKILL after a bound;
2. ``atexit`` and a SIGTERM/SIGHUP handler kill every JVM still registered
   when the interpreter exits or is told to die;
3. on Linux the kernel delivers SIGKILL to the JVM when the thread that
   spawned it dies (``prctl(PR_SET_PDEATHSIG)``, set by a small exec wrapper
   that then becomes the JVM; Java itself cannot ask for this), which covers
   ``kill -9`` of the owner;
4. :func:`reap_stale` kills tagged JVMs whose owner is gone; launchers call it
   before starting new brokers, and ``python -m kafkacore.testing reap`` exposes it.
   :func:`reap_stale_workdirs` likewise removes work directories (marked with
   an owner file) that a killed owner left behind.
"""

from __future__ import annotations

import atexit
import contextlib
import os
import shutil
import signal
import subprocess
import sys
import threading
from collections.abc import Sequence
from pathlib import Path
from types import FrameType
from typing import IO

__all__ = [
    "OWNER_FLAG",
    "ManagedProcess",
    "kill_all",
    "mark_workdir",
    "owner_tag",
    "reap_stale",
    "reap_stale_workdirs",
]

OWNER_FLAG = "-Dlocalkafka.owner="

_live: set[ManagedProcess] = set()
_live_lock = threading.Lock()
_handlers_installed = False


def _start_ticks(pid: int) -> str | None:
    """Return the process start time in clock ticks, or None if it is gone."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    # The command name (field 2) may contain spaces; fields resume after ')'.
    fields = stat.rsplit(")", 1)[1].split()
    return fields[19]  # field 22 overall: starttime


def owner_tag() -> str:
    """The marker argument that ties a JVM to this Python process."""
    pid = os.getpid()
    return f"{OWNER_FLAG}{pid}:{_start_ticks(pid) or 0}"


# Runs between our fork and the JVM: asks the kernel for SIGKILL when the
# parent goes, checks the parent did not already go, then becomes the JVM
# (the death signal survives exec). A tiny exec wrapper rather than a
# preexec_fn, because preexec_fn is not safe when other threads are running.
_PDEATHSIG_EXEC = """
import ctypes, os, signal, sys
ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGKILL, 0, 0, 0)  # 1: PR_SET_PDEATHSIG
if os.getppid() != int(sys.argv[1]):
    os._exit(1)
os.execvp(sys.argv[2], sys.argv[2:])
"""


def _with_pdeathsig(argv: list[str]) -> list[str]:
    """Wrap ``argv`` so the kernel SIGKILLs it if this process dies (Linux)."""
    if not sys.platform.startswith("linux"):
        return argv
    # The signal fires when the *thread* that forked exits, so only arm it
    # from the main thread; a JVM started from a worker thread relies on the
    # other three nets.
    if threading.current_thread() is not threading.main_thread():
        return argv
    return [sys.executable, "-I", "-S", "-c", _PDEATHSIG_EXEC, str(os.getpid()), *argv]


class ManagedProcess:
    """One tagged child process in its own process group."""

    def __init__(self, argv: Sequence[str], *, log_path: Path, cwd: Path) -> None:
        _install_handlers()
        self.log_path = log_path
        self._log: IO[bytes] = open(log_path, "ab")  # noqa: SIM115 - closed in _reaped()
        try:
            self.popen = subprocess.Popen(
                _with_pdeathsig(list(argv)),
                cwd=cwd,
                stdin=subprocess.DEVNULL,
                stdout=self._log,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )
        except BaseException:
            self._log.close()
            raise
        with _live_lock:
            _live.add(self)

    @property
    def pid(self) -> int:
        return self.popen.pid

    def poll(self) -> int | None:
        code = self.popen.poll()
        if code is not None:
            self._reaped()
        return code

    def _signal_group(self, sig: int) -> None:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(self.popen.pid, sig)

    def kill(self) -> None:
        """SIGKILL the whole process group and wait for it."""
        self._signal_group(signal.SIGKILL)
        self.popen.wait()
        self._reaped()

    def pause(self) -> None:
        """SIGSTOP the process group (a frozen process keeps its sockets open)."""
        self._signal_group(signal.SIGSTOP)

    def resume(self) -> None:
        """SIGCONT the process group."""
        self._signal_group(signal.SIGCONT)

    def stop(self, timeout: float) -> int:
        """SIGTERM, then SIGKILL if the process is still there after ``timeout`` s."""
        if self.popen.poll() is None:
            self._signal_group(signal.SIGTERM)
            try:
                self.popen.wait(timeout)
            except subprocess.TimeoutExpired:
                self._signal_group(signal.SIGKILL)
                self.popen.wait()
        # The JVM may have left children in its group; make sure they go too.
        self._signal_group(signal.SIGKILL)
        self._reaped()
        return self.popen.returncode

    def _reaped(self) -> None:
        with _live_lock:
            _live.discard(self)
        if not self._log.closed:
            self._log.close()


def kill_all() -> None:
    """SIGKILL every registered child; used at exit and on fatal signals."""
    with _live_lock:
        procs = list(_live)
    for proc in procs:
        proc._signal_group(signal.SIGKILL)
    for proc in procs:
        with contextlib.suppress(Exception):
            proc.popen.wait(10)
        proc._reaped()


def _on_signal(signum: int, frame: FrameType | None) -> None:
    kill_all()
    # Die the way the signal meant us to, so exit statuses stay truthful.
    signal.signal(signum, signal.SIG_DFL)
    os.kill(os.getpid(), signum)


def _install_handlers() -> None:
    global _handlers_installed
    if _handlers_installed:
        return
    _handlers_installed = True
    atexit.register(kill_all)
    if threading.current_thread() is not threading.main_thread():
        return
    for sig in (signal.SIGTERM, signal.SIGHUP):
        # Leave handlers that someone else installed alone.
        if signal.getsignal(sig) is signal.SIG_DFL:
            signal.signal(sig, _on_signal)


def _owner_alive(value: str) -> bool:
    """Whether ``<pid>:<start-ticks>`` names a live process (not a recycled pid)."""
    owner, _, ticks = value.strip().partition(":")
    return owner.isdigit() and _start_ticks(int(owner)) == ticks


OWNER_FILE = ".localkafka-owner"


def mark_workdir(path: Path) -> None:
    """Record this process as the owner of work directory ``path``."""
    (path / OWNER_FILE).write_text(owner_tag()[len(OWNER_FLAG) :])


def reap_stale_workdirs(parent: Path) -> list[Path]:
    """Remove ``localkafka-*`` directories under ``parent`` whose owner is gone.

    Only directories carrying our owner file are touched; a kill -9 of the
    owner leaves them behind, and nothing else would clean them.
    """
    removed = []
    for path in parent.glob("localkafka-*"):
        try:
            value = (path / OWNER_FILE).read_text()
        except OSError:
            continue
        if not _owner_alive(value):
            shutil.rmtree(path, ignore_errors=True)
            removed.append(path)
    return removed


def reap_stale() -> list[int]:
    """SIGKILL tagged JVMs whose owning Python process is gone; return their pids."""
    killed: list[int] = []
    proc_dir = Path("/proc")
    if not proc_dir.is_dir():
        return killed
    for entry in proc_dir.iterdir():
        if not entry.name.isdigit():
            continue
        try:
            argv = (entry / "cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        tags = [a for a in argv if a.startswith(OWNER_FLAG.encode())]
        if not tags:
            continue
        if _owner_alive(tags[0][len(OWNER_FLAG) :].decode(errors="replace")):
            continue
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.kill(int(entry.name), signal.SIGKILL)
            killed.append(int(entry.name))
    return killed
