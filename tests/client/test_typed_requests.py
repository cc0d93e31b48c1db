"""Requests typed by their response: RequestHandle[R] and RequestCompleted[R] for mypy."""

from __future__ import annotations

import random
import textwrap
import typing
from pathlib import Path

import mypy.api

from kafkacore.client import KafkaClientCore, RequestCompleted
from kafkacore.protocol import messages as m
from kafkacore.protocol._base import Request
from kafkacore.protocol.api import APIS

ROOT = Path(__file__).resolve().parents[2]


def test_every_request_class_names_its_response() -> None:
    for info in APIS.values():
        request_cls = info.request_type
        [base] = request_cls.__orig_bases__  # type: ignore[attr-defined]
        assert typing.get_origin(base) is Request, request_cls
        [answer] = typing.get_args(base)
        assert isinstance(answer, typing.ForwardRef)
        response_cls = getattr(m, answer.__forward_arg__)
        assert response_cls is info.response_type, (request_cls, response_cls)
        assert response_cls.API_KEY == request_cls.API_KEY


def test_the_type_parameter_costs_nothing_at_runtime() -> None:
    # No __new__ of typing's, no instance dict: instances are built as before.
    assert m.FetchRequest.__new__ is object.__new__
    assert not hasattr(m.FetchRequest(), "__dict__")


def test_completed_by_matches_only_its_own_event() -> None:
    core = KafkaClientCore(now=0.0, rng=random.Random(0))
    first = core.send(m.MetadataRequest(), now=0.0)
    second = core.send(m.MetadataRequest(), now=0.0)
    core.cancel(first, now=0.0)
    events = core.pull_events()
    [event] = [e for e in events if isinstance(e, RequestCompleted)]
    assert first.completed_by(event) and not second.completed_by(event)
    assert not first.completed_by(object())


SNIPPET = """
    import random
    from typing import assert_type

    from kafkacore.client import KafkaClientCore, RequestCompleted, RequestHandle
    from kafkacore.protocol.messages import (
        FetchRequest,
        FetchResponse,
        MetadataRequest,
        MetadataResponse,
    )

    core = KafkaClientCore(now=0.0, rng=random.Random(0))
    handle = core.send(MetadataRequest(), now=0.0)
    assert_type(handle, RequestHandle[MetadataResponse])
    assert_type(handle.response, MetadataResponse | None)
    assert_type(handle.result(), MetadataResponse)
    fetch = core.send(FetchRequest(), now=0.0, build=lambda version: FetchRequest())
    assert_type(fetch, RequestHandle[FetchResponse])
    for event in core.pull_events():
        if handle.completed_by(event):
            assert_type(event, RequestCompleted[MetadataResponse])
            assert_type(event.response, MetadataResponse | None)
    wrong: RequestHandle[FetchResponse] = core.send(MetadataRequest(), now=0.0)
"""


def test_mypy_sees_the_response_type(tmp_path: Path) -> None:
    source = tmp_path / "typed_send.py"
    source.write_text(textwrap.dedent(SNIPPET))
    out, err, status = mypy.api.run(
        [
            "--strict",
            "--cache-dir",
            str(ROOT / ".mypy_cache"),
            "--no-error-summary",
            str(source),
        ]
    )
    lines = [line for line in out.splitlines() if line.strip()]
    # Only the deliberately wrong line is refused.
    assert len(lines) == 1, out + err
    assert 'typed_send.py:24: error: Argument 1 to "send"' in lines[0], out
    assert 'incompatible type "MetadataRequest"' in lines[0] and status == 1
