"""Hops of one produce and one poll on the selector transport, counted from the running code.

Run: ``.venv/bin/python benchmarks/hops.py [--bootstrap H:P] [--trace] [--json OUT.json]``
(``KAFKACORE_PURE=1`` in the environment measures the pure-Python record path.)

A *hop* is a call into a Python function defined in ``kafkacore/`` or
``transports/`` of the tree the interpreter imports. The script installs a
profile hook (``sys.setprofile`` and ``threading.setprofile``) before it
builds the producer and the consumer, so the caller's thread and each loop
thread report every call; it is armed only while the measured record
travels, after a warm-up has made the connections, metadata and producer
id. The record's value carries a unique marker, which tells its bytes apart
from every other buffer on the way.

Three legs, each a window of the event stream (one global order: the GIL
serialises the events of all threads):

* ``produce-out``: from the user's ``KafkaProducer.send`` to the socket
  ``send`` whose buffer holds the marker. Counted: the calls inside
  ``send`` on the user's thread, and every call on the thread that writes
  the bytes (the loop) between the two points.
* ``produce-back``: from the first socket read on that same socket after
  the write (the Produce response) to ``Future.set_result`` of the
  record's future, on the loop thread.
* ``poll``: from the socket read that brought the Fetch response (the last
  read on its thread before the first call whose arguments hold the
  marker) to the return of ``KafkaConsumer.poll`` with the record: calls on
  that thread in the window, and calls inside ``poll`` on the user's
  thread after the read. The partition is paused while the record is
  produced and resumed just before ``poll``, so the record arrives in a
  fresh Fetch response inside the window.

Two counts per leg, both of distinct functions (a function called five
times is one hop):

* *chain*: the functions a reader follows to see the record move. A call
  *carries* the record when one of its arguments other than ``self``, or
  its return value, holds the record: its bytes (the marker, or for a
  response the bytes the socket read returned), an object returned by an
  earlier carrying call (the decoded response, the request handle), or a
  list, tuple, dict or object holding one, up to four levels down. The
  chain is every counted function on the call stack at a carrying call,
  at the leg's first event and at its last: the carriers and their
  callers, up to the loop or the user's call. This is the "function hops"
  figure of issue 11 (about 45 for ``produce-out`` before the split).
* *hops*: every function that runs on the leg's threads in the window
  (called in it, or returning in it: the loop pass that read the bytes
  began before them), the loop's own work included (deadline arithmetic, metadata checks, the
  idle passes of the linger wait): an upper bound, and the figure the
  brief's "calls into functions defined in kafkacore/ or transports/
  between the two points" names.

Also: *calls* (every call of a hop: a generator counts once per
resumption). Not counted as hops, and reported apart: the generated codec
(``kafkacore/protocol/messages/``); comprehensions and generator
expressions (``<listcomp>``, ``<genexpr>``: code objects of their own in
Python 3.11, but not hops a reader follows); code outside the two
packages (the standard library, dataclass-made ``__init__``).

*crc* counts checksum calls on the leg: Python calls to ``crc32c`` /
``crc32c_py`` and calls of a compiled function named ``crc32c``. The
compiled record builder and decoder compute their CRC inside Rust, where
no hook sees them: run with ``KAFKACORE_PURE=1`` to see every one.
*buffers* are the distinct ``bytes``/``bytearray`` objects (a
``memoryview`` counts as the object it views) holding the record's bytes
(for ``produce-back``, the response's), seen in an argument, a local or a
return value of a counted function or of the socket call: each one past
the first is a copy. Buffers that live only inside compiled code are not
seen.
"""

from __future__ import annotations

import argparse
import concurrent.futures
import contextlib
import inspect
import json
import os
import socket
import sys
import threading
import time
import uuid
from collections import deque
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from types import CodeType, FrameType, FunctionType, MethodType, ModuleType
from typing import Any

__all__ = [
    "Buffer",
    "Event",
    "Hop",
    "Leg",
    "Recorder",
    "inbound_leg",
    "outbound_leg",
    "poll_leg",
    "summarize",
]

_WRITES = frozenset({"send", "sendall", "sendmsg"})
_READS = frozenset({"recv", "recv_into", "recvmsg", "recvfrom"})
_CRC_NAMES = frozenset({"crc32c", "crc32c_py"})
_RESOLVES = frozenset({"set_result", "set_exception"})
_FUTURE_FILE = concurrent.futures.Future.set_result.__code__.co_filename
_SCAN_LIMIT = 1 << 20  # a memoryview larger than this is checked through its base
_SCAN_ITEMS = 64  # a container's first items only: the hook must stay cheap
_SCAN_BUDGET = 4096  # objects visited per scan, at most
_ARG_DEPTH = 4  # an argument, its items or attributes, theirs, and theirs
_MARKER_MIN = 8  # shorter buffers are never the record
_SEED_SIZE = 32  # a read's last bytes: in its frame, the frame's body and what decodes it
_SEED_MIN = 48  # a read shorter than this (a wake-up byte) is not followed
_ATOMS = (int, float, str, bool, complex, bytes, bytearray, memoryview)


@dataclass(frozen=True, slots=True)
class Event:
    """One thing the hook saw while armed.

    ``kind``: ``call`` / ``return`` (a function in the counted packages),
    ``write`` / ``read`` (a socket call), ``crc`` (a compiled ``crc32c``),
    ``resolve`` (``Future.set_result`` or ``set_exception``). ``carries``:
    the call holds the record or a response (see the module docstring);
    ``record``: it holds the record's own bytes. ``target`` is
    the id of the socket (write, read), of the future (resolve) or of the
    frame (call, return). ``stack`` is filled for socket calls and
    resolves: the counted functions on the stack, innermost last.
    """

    seq: int
    thread: int
    kind: str
    name: str
    target: int = 0
    carries: bool = False
    record: bool = False  # the record's own bytes, not only a response's
    stack: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class Buffer:
    """A distinct buffer that held the marker: where it was first seen."""

    seq: int
    type: str
    size: int
    seen_in: str


@dataclass(slots=True)
class Hop:
    name: str
    thread: str  # "user" or "loop"
    calls: int = 0  # 0: it began before the window and returned in it
    carries: bool = False  # some call held the record in its arguments or result


@dataclass(slots=True)
class Leg:
    """One measured stretch of the path, with what was counted in it."""

    name: str
    start: str  # the first event: the user's call or a socket read
    end: str  # the last: the socket write, the future resolved, the user's call returning
    start_seq: int
    end_seq: int
    hops: list[Hop] = field(default_factory=list)
    calls: int = 0
    generated: int = 0
    comprehensions: int = 0
    crc: int = 0
    buffers: list[Buffer] = field(default_factory=list)
    chain: list[str] = field(default_factory=list)
    end_stack: tuple[str, ...] = ()

    @property
    def hop_count(self) -> int:
        return len(self.hops)


class Recorder:
    """The profile hook: records calls into ``roots`` and the socket calls, while armed.

    ``roots`` maps a package name to its directory; a function counts when
    its file lies under one of them, and is named ``package.module.qualname``.
    ``generated(module)`` tells the generated codec apart. ``marker`` is the
    content that identifies the record's bytes; the last bytes of every
    socket read become markers too (they end the read's last frame, that
    frame's body and the part of it a decoder is handed), so a response is
    followed as well.
    """

    def __init__(
        self,
        roots: Mapping[str, Path],
        marker: bytes,
        generated: Callable[[str], bool] = lambda m: m.startswith("kafkacore.protocol.messages"),
    ) -> None:
        self._roots = [(name, str(path.resolve()) + os.sep) for name, path in roots.items()]
        self.markers = [marker] if marker else []
        self.generated = generated
        self.events: list[Event] = []
        self.buffers: list[Buffer] = []
        self._held: dict[int, object] = {}  # keeps seen buffers alive: ids stay unique
        self._watched: dict[int, object] = {}  # objects returned by carrying calls
        self._carrying: set[int] = set()  # frames whose call carried the record
        self._reading: dict[int, FrameType] = {}  # thread -> frame that just read a socket
        self._names: dict[CodeType, str | None] = {}
        self._budget = 0
        self._hit_record = False  # the last scan saw the record's own bytes
        self._armed = False
        self._lock = threading.Lock()

    @property
    def marker(self) -> bytes:
        return self.markers[0] if self.markers else b""

    @marker.setter
    def marker(self, value: bytes) -> None:
        """Follow a new record: forget the old markers and watched objects."""
        self.markers = [value]
        self._watched.clear()
        self._carrying.clear()

    # -- life -----------------------------------------------------------------
    def install(self) -> None:
        """Hook this thread and every thread started from now on (disarmed)."""
        threading.setprofile(self._profile)
        sys.setprofile(self._profile)

    def uninstall(self) -> None:
        sys.setprofile(None)
        threading.setprofile(None)
        self._armed = False

    @contextlib.contextmanager
    def armed(self) -> Iterator[None]:
        self._armed = True
        try:
            yield
        finally:
            self._armed = False

    @property
    def seq(self) -> int:
        """The sequence number the next event gets."""
        return len(self.events)

    # -- the hook ---------------------------------------------------------------
    def _name(self, code: CodeType) -> str | None:
        try:
            return self._names[code]
        except KeyError:
            pass
        name = None
        filename = os.path.abspath(code.co_filename)
        for package, prefix in self._roots:
            if filename.startswith(prefix):
                module = filename[len(prefix) :].removesuffix(".py").replace(os.sep, ".")
                module = module.removesuffix("__init__").rstrip(".")
                name = ".".join(p for p in (package, module, code.co_qualname) if p)
                break
        self._names[code] = name
        return name

    def _profile(self, frame: FrameType, event: str, arg: Any) -> None:
        if not self._armed:
            return
        with self._lock:  # threads switch inside the hook too
            thread = threading.get_ident()
            if self._reading and event != "c_return":
                reader = self._reading.pop(thread, None)
                if reader is not None:
                    self._seed(reader)
            if event == "call":
                self._on_call(frame)
            elif event == "return":
                self._on_return(frame, arg)
            elif event == "c_call":
                self._on_c_call(frame, arg, thread)

    def _on_call(self, frame: FrameType) -> None:
        code = frame.f_code
        name = self._name(code)
        if name is not None:
            carries = self._scan(_arguments(frame), name, _ARG_DEPTH)
            if carries:
                self._carrying.add(id(frame))
            self._add("call", name, id(frame), carries, frame if carries else None)
        elif code.co_name in _RESOLVES and code.co_filename == _FUTURE_FILE:
            self._add("resolve", code.co_name, id(frame.f_locals.get("self")), False, frame)

    def _on_return(self, frame: FrameType, value: Any) -> None:
        name = self._name(frame.f_code)
        if name is None:
            return
        if frame.f_code.co_name == "fan_out" and "_producer_fanout" in frame.f_code.co_filename:
            # The producer's light futures are resolved inside fan_out (their
            # outcome stored, no set_result call to see): each token of the
            # completed batch counts as resolved when fan_out returns.
            for token in list(getattr(frame.f_locals.get("event"), "tokens", ()))[:64]:
                self._add("resolve", "fan_out", id(token), False, frame)
        carried = id(frame) in self._carrying
        self._carrying.discard(id(frame))
        self._scan(_arguments(frame, every_local=True), name, 1)  # copies held in locals
        carries = self._scan((value,), name, _ARG_DEPTH)
        if (carried or carries) and _followable(value, frame):
            self._watched[id(value)] = value
        self._add("return", name, id(frame), carries, frame if carries else None)

    def _on_c_call(self, frame: FrameType, fn: Any, thread: int) -> None:
        fn_name = getattr(fn, "__name__", "")
        owner = getattr(fn, "__self__", None)
        if isinstance(owner, socket.socket) and (fn_name in _WRITES or fn_name in _READS):
            if fn_name in _WRITES:
                carries = self._scan(_arguments(frame, every_local=True), "socket", _ARG_DEPTH)
                self._add("write", f"socket.{fn_name}", id(owner), carries, frame)
            else:
                self._reading[thread] = frame
                self._add("read", f"socket.{fn_name}", id(owner), False, frame)
        elif fn_name == "crc32c":
            self._add("crc", fn_name, 0, False)

    def _seed(self, reader: FrameType) -> None:
        """The bytes a socket read just returned (a local of the reader) become markers."""
        for value in reader.f_locals.values():
            if type(value) in (bytes, bytearray) and len(value) >= _SEED_MIN:
                seed = bytes(value[-_SEED_SIZE:])
                if seed not in self.markers:
                    self.markers.append(seed)

    def _add(
        self, kind: str, name: str, target: int, carries: bool, frame: FrameType | None = None
    ) -> None:
        stack: tuple[str, ...] = ()
        if frame is not None:
            names = []
            f: FrameType | None = frame
            while f is not None:
                n = self._name(f.f_code)
                if n is not None:
                    names.append(n)
                f = f.f_back
            stack = tuple(reversed(names))
        record = carries and self._hit_record
        self.events.append(
            Event(
                len(self.events), threading.get_ident(), kind, name, target, carries, record, stack
            )
        )

    def _scan(self, values: Iterable[Any], where: str, depth: int) -> bool:
        """True if any value (or an item or attribute of one, ``depth`` deep) holds the record."""
        self._budget = _SCAN_BUDGET
        self._hit_record = False
        return self._any(values, where, depth)

    def _any(self, values: Iterable[Any], where: str, depth: int) -> bool:
        found = False
        for value in values:
            if self._holds(value, where, depth):
                found = True
        return found

    def _holds(self, value: Any, where: str, depth: int) -> bool:
        self._budget -= 1
        if self._budget < 0:
            return False
        if id(value) in self._watched:
            return True
        kind = type(value)
        if kind is bytes or kind is bytearray:
            return self._buffer(value, value, where)
        if kind is memoryview:
            data = value.tobytes() if value.nbytes <= _SCAN_LIMIT else value.obj
            return isinstance(data, bytes | bytearray) and self._buffer(data, value.obj, where)
        if depth == 0 or value is None or kind in _ATOMS:
            return False
        items: Iterable[Any]
        if isinstance(value, list | tuple | deque | set | frozenset):
            items = list(value)[:_SCAN_ITEMS] if len(value) <= 4 * _SCAN_ITEMS else ()
        elif isinstance(value, dict):
            items = list(value.values())[:_SCAN_ITEMS]
        else:
            items = _attributes(value)
        return self._any(items, where, depth - 1)

    def _buffer(self, data: bytes | bytearray, owner: object, where: str) -> bool:
        if len(data) < _MARKER_MIN or not any(m in data for m in self.markers):
            return False
        if self.markers[0] in data:
            self._hit_record = True
        if id(owner) not in self._held:
            self._held[id(owner)] = owner
            size = len(owner) if isinstance(owner, bytes | bytearray) else -1
            self.buffers.append(Buffer(len(self.events), type(owner).__name__, size, where))
        return True


def _arguments(frame: FrameType, every_local: bool = False) -> list[Any]:
    """A frame's arguments (every local with ``every_local``), without ``self``/``cls``."""
    local = frame.f_locals
    if every_local:
        names: Iterable[str] = local
    else:
        code = frame.f_code
        count = code.co_argcount + code.co_kwonlyargcount
        count += bool(code.co_flags & inspect.CO_VARARGS)
        count += bool(code.co_flags & inspect.CO_VARKEYWORDS)
        names = code.co_varnames[:count]
    return [local[n] for n in names if n not in ("self", "cls") and n in local]


def _followable(value: Any, frame: FrameType) -> bool:
    """Whether a carrying call's result is followed by identity (an object it made or took)."""
    if value is None or type(value) in _ATOMS or value is frame.f_locals.get("self"):
        return False
    return not isinstance(value, type | ModuleType | FunctionType | MethodType)


def _attributes(value: Any) -> list[Any]:
    """An object's own attributes (``__dict__`` and slots), without running properties."""
    out: list[Any] = []
    with contextlib.suppress(TypeError):
        out.extend(list(vars(value).values())[:_SCAN_ITEMS])
    for klass in type(value).__mro__:
        for slot in klass.__dict__.get("__slots__", ()):
            if isinstance(slot, str) and not slot.startswith("__"):
                with contextlib.suppress(AttributeError):
                    out.append(object.__getattribute__(value, slot))
    return out


# -- legs ----------------------------------------------------------------------------


def _first(events: Iterable[Event], found: Callable[[Event], bool], what: str) -> Event:
    """The first event ``found`` accepts; a RuntimeError naming ``what`` if none."""
    for e in events:
        if found(e):
            return e
    raise RuntimeError(f"hops: no {what} among the recorded events; was the recorder armed?")


def _user_call(events: Sequence[Event], after: int, thread: int) -> tuple[Event, Event]:
    """The first counted call on ``thread`` after ``after`` and its return."""
    call = _first(events[after:], lambda e: e.thread == thread and e.kind == "call", "user call")
    ret = _first(
        events[call.seq + 1 :],
        lambda e: e.kind == "return" and e.target == call.target and e.thread == thread,
        f"return of {call.name}",
    )
    return call, ret


def _hop(recorder: Recorder, name: str) -> bool:
    """Counted as a hop: not the generated codec, not a comprehension."""
    if recorder.generated(name):
        return False
    last = name.rsplit(".", 1)[-1]
    return not last.startswith("<") or last == "<lambda>"


def _count(
    recorder: Recorder,
    name: str,
    start: Event,
    end: Event,
    loop: int,
    user: tuple[int, int, int] | None,
) -> Leg:
    """A leg: every counted call on ``loop`` in [start, end], and on the user's
    thread those inside the user call span ``user`` = (thread, first, last)."""
    leg = Leg(name, start.name, end.name, start.seq, end.seq)
    hops: dict[str, Hop] = {}
    chain: dict[str, None] = {}
    for e in recorder.events[start.seq : end.seq + 1]:
        on_loop = e.thread == loop
        on_user = user is not None and e.thread == user[0] and user[1] <= e.seq <= user[2]
        if not (on_loop or on_user):
            continue
        if e.carries or e is start or e is end:
            chain.update(dict.fromkeys(n for n in e.stack if _hop(recorder, n)))
        if e.kind == "crc" or (e.kind == "call" and e.name.rsplit(".", 1)[-1] in _CRC_NAMES):
            leg.crc += 1
        if e.kind not in ("call", "return"):
            continue
        if not _hop(recorder, e.name):
            if e.kind == "call" and recorder.generated(e.name):
                leg.generated += 1
            elif e.kind == "call":
                leg.comprehensions += 1
            continue
        hop = hops.get(e.name)
        if hop is None:
            hop = hops[e.name] = Hop(e.name, "user" if on_user else "loop")
        if e.kind == "call":
            hop.calls += 1
            leg.calls += 1
        hop.carries = hop.carries or e.carries
    leg.hops = list(hops.values())
    leg.chain = list(chain)
    leg.buffers = [b for b in recorder.buffers if start.seq <= b.seq <= end.seq]
    leg.end_stack = end.stack
    return leg


def outbound_leg(recorder: Recorder, mark: int, user_thread: int) -> Leg:
    """``produce-out``: the user's call after ``mark`` to the socket write holding the marker."""
    events = recorder.events
    call, ret = _user_call(events, mark, user_thread)
    write = _first(
        events[call.seq :], lambda e: e.kind == "write" and e.record, "socket write of the record"
    )
    return _count(
        recorder, "produce-out", call, write, write.thread, (user_thread, call.seq, ret.seq)
    )


def inbound_leg(recorder: Recorder, mark: int, future: object) -> Leg:
    """``produce-back``: the response's read on the written socket to resolving ``future``."""
    events = recorder.events
    write = _first(
        events[mark:], lambda e: e.kind == "write" and e.record, "socket write of the record"
    )
    read = _first(
        events[write.seq :],
        lambda e: e.kind == "read" and e.target == write.target and e.thread == write.thread,
        "read on the socket that wrote the record",
    )
    done = _first(
        events[read.seq :],
        lambda e: e.kind == "resolve" and e.target == id(future),
        "resolution of the record's future",
    )
    return _count(recorder, "produce-back", read, done, read.thread, None)


def poll_leg(recorder: Recorder, mark: int, user_thread: int) -> Leg:
    """``poll``: the read that brought the marker to the return of the user call after ``mark``."""
    events = recorder.events
    call, ret = _user_call(events, mark, user_thread)
    first = _first(
        events[mark:],
        lambda e: e.record and e.kind == "call" and e.thread != user_thread,
        "call holding the record off the user's thread",
    )
    read = _first(
        reversed(events[mark : first.seq]),
        lambda e: e.kind == "read" and e.thread == first.thread,
        "socket read before the record's first call",
    )
    # The user's call may have begun before the bytes came (it waited): its
    # return is in the window, so it still counts.
    user = (user_thread, max(call.seq, read.seq), ret.seq)
    return _count(recorder, "poll", read, ret, first.thread, user)


def summarize(legs: Sequence[Leg]) -> dict[str, Any]:
    """Per leg and for the produce round trip: hops, calls, codec, crc, buffers."""
    out: dict[str, Any] = {}
    for leg in legs:
        out[leg.name] = {
            "hops": leg.hop_count,
            "chain": len(leg.chain),
            "calls": leg.calls,
            "generated_codec_calls": leg.generated,
            "comprehension_calls": leg.comprehensions,
            "crc": leg.crc,
            "buffers": len(leg.buffers),
        }
    produce = [leg for leg in legs if leg.name.startswith("produce")]
    if produce:
        out["produce"] = {
            "hops": sum(leg.hop_count for leg in produce),
            "distinct_functions": len({h.name for leg in produce for h in leg.hops}),
            "chain": sum(len(leg.chain) for leg in produce),
            "calls": sum(leg.calls for leg in produce),
            "crc": sum(leg.crc for leg in produce),
        }
    return out


# -- the measurement ---------------------------------------------------------------


def _marker() -> bytes:
    return b"hops-marker-" + uuid.uuid4().hex.encode()


def measure(bootstrap: str) -> tuple[list[Leg], dict[str, Any]]:
    """Warm a producer and a consumer up, then record one send and one poll."""
    from _harness import create_topics

    import kafkacore
    from kafkacore.client import TopicPartition
    from kafkacore.records import _backend
    from kafkacore.transports.selector import KafkaConsumer, KafkaProducer

    tree = Path(kafkacore.__file__).resolve().parents[1]
    topic = f"hops-{uuid.uuid4().hex[:8]}"
    create_topics(bootstrap, [topic])
    tp = TopicPartition(topic, 0)
    # The drivers load through the kafkacore/transports link, so their files
    # lie under kafkacore/ and are named kafkacore.transports.*.
    recorder = Recorder({"kafkacore": tree / "kafkacore"}, b"")
    user = threading.get_ident()
    recorder.install()
    try:
        producer = KafkaProducer(bootstrap_servers=bootstrap, client_id="hops")
        for i in range(3):  # connections, metadata, producer id, first sequences
            producer.send(topic, b"warm-%d" % i).result(timeout=60)
        time.sleep(0.3)  # the loop finishes the pass that resolved the last future

        recorder.marker = _marker()
        value = recorder.marker + b"." * 64
        with recorder.armed():
            mark = recorder.seq
            future = producer.send(topic, value)
            future.result(timeout=60)
            time.sleep(0.3)
        out = outbound_leg(recorder, mark, user)
        back = inbound_leg(recorder, mark, future)

        consumer = KafkaConsumer(bootstrap_servers=bootstrap, client_id="hops-consumer")
        consumer.assign([tp])
        consumer.seek(tp, 0)
        seen = 0
        deadline = time.monotonic() + 60
        while seen < 4 and time.monotonic() < deadline:
            seen += len(consumer.poll_records(timeout=1.0))
        if seen < 4:
            raise RuntimeError(f"hops: the consumer warm-up read {seen} of 4 records")
        consumer.pause(tp)
        time.sleep(1.0)  # a Fetch in flight when paused comes back (empty) first
        recorder.marker = _marker()
        producer.send(topic, recorder.marker + b"." * 64).result(timeout=60)
        producer.close()
        time.sleep(0.3)
        with recorder.armed():
            consumer.resume(tp)
            mark = recorder.seq
            records = consumer.poll_records(timeout=30.0)
        if not records or recorder.marker not in (records[0].value or b""):
            raise RuntimeError(f"hops: poll returned {records!r}, not the marked record")
        poll = poll_leg(recorder, mark, user)
        consumer.close()
    finally:
        recorder.uninstall()
    meta = {
        "tree": str(tree),
        "records": _backend.IMPLEMENTATION,
        "python": sys.version.split()[0],
        "bootstrap": bootstrap,
    }
    return [out, back, poll], meta


def _report(legs: Sequence[Leg], meta: Mapping[str, Any], trace: bool) -> str:
    lines = [f"hops on {meta['tree']} (records: {meta['records']}, Python {meta['python']})", ""]
    lines.append("| leg | chain | hops | calls | generated codec calls | crc calls | buffers |")
    lines.append("|---|---|---|---|---|---|---|")
    for leg in legs:
        lines.append(
            f"| {leg.name} | {len(leg.chain)} | {leg.hop_count} | {leg.calls} | {leg.generated} "
            f"| {leg.crc} | {len(leg.buffers)} |"
        )
    total = summarize(legs)["produce"]
    lines.append(
        f"\nproduce round trip: chain {total['chain']}, {total['hops']} hops "
        f"({total['distinct_functions']} distinct functions), {total['calls']} calls, "
        f"{total['crc']} crc calls seen"
    )
    for leg in legs:
        lines.append(
            f"\n{leg.name}: {leg.start} (event {leg.start_seq}) -> {leg.end} (event {leg.end_seq})"
        )
        for b in leg.buffers:
            lines.append(f"  buffer {b.type}[{b.size}] first seen in {b.seen_in} (event {b.seq})")
        if trace:
            lines.append("  chain:")
            lines += [f"    {n}" for n in leg.chain]
            lines.append("  hops (* carries the record):")
            for hop in leg.hops:
                mark = "*" if hop.carries else " "
                lines.append(f"  {mark} {hop.thread:4} {hop.calls:4}  {hop.name}")
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--bootstrap", help="an existing broker (default: start one)")
    parser.add_argument("--trace", action="store_true", help="list the chain and hops of each leg")
    parser.add_argument("--json", type=Path, help="write the legs and hops here")
    args = parser.parse_args(argv)
    sys.path.insert(0, str(Path.cwd() / "benchmarks"))
    from _harness import broker

    with broker(args.bootstrap) as bootstrap:
        legs, meta = measure(bootstrap)
    print(_report(legs, meta, args.trace))
    if args.json:
        doc = {"meta": meta, "summary": summarize(legs), "legs": [asdict(leg) for leg in legs]}
        args.json.write_text(json.dumps(doc, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
