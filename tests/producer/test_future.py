"""The producer's light futures, their fan-out and the send_many / option shapes, without I/O."""

from __future__ import annotations

import logging
import threading
import time
from typing import Any

import pytest

from kafkacore.errors import KafkaTimeoutError, LocalProtocolError
from kafkacore.producer import BatchCompleted, RecordMetadata
from kafkacore.producer.errors import ProducerConfigError
from kafkacore.transports._producer_fanout import ManyResult, fail_token, fan_out
from kafkacore.transports._producer_future import (
    Idiom,
    LightFuture,
    RecordFuture,
    ThreadIdiom,
    WaitTimeoutError,
)
from kafkacore.transports._producer_inputs import peer_options, to_columns


def _batch(tokens: list[Any], *, base: int = 100, error: BaseException | None = None) -> Any:
    return BatchCompleted(
        topic="t",
        partition=2,
        base_offset=base,
        log_append_time=-1,
        tokens=tokens,
        timestamps=[1000 + i for i in range(len(tokens))],
        error=error,
    )


IDIOM = Idiom("P")


def test_a_record_future_is_filled_by_its_batch_and_makes_metadata_on_demand() -> None:
    futs = [RecordFuture(IDIOM) for _ in range(3)]
    assert not futs[0].done() and not futs[0].is_done and futs[0].value is None
    fan_out(_batch(list(futs)))
    assert [f.result() for f in futs] == [
        RecordMetadata("t", 2, 100 + i, 1000 + i) for i in range(3)
    ]
    assert futs[1].get() == futs[1].value == RecordMetadata("t", 2, 101, 1001)
    assert futs[2].succeeded() and not futs[2].failed() and futs[2].exception() is None
    assert futs[0].cancel() is False and not futs[0].cancelled()
    assert "offset=100" in repr(futs[0])


def test_unknown_offsets_and_log_append_time() -> None:
    fut = RecordFuture(IDIOM)
    fan_out(_batch([fut], base=-1))
    assert fut.result().offset == -1
    fut2 = RecordFuture(IDIOM)
    event = BatchCompleted(
        topic="t", partition=0, base_offset=5, log_append_time=77, tokens=[fut2], timestamps=[1]
    )
    fan_out(event)
    assert fut2.result() == RecordMetadata("t", 0, 5, 77)


def test_a_failed_batch_fails_every_record_with_its_error() -> None:
    futs = [RecordFuture(IDIOM) for _ in range(2)]
    error = KafkaTimeoutError("gone")
    fan_out(_batch(list(futs), error=error))
    for fut in futs:
        assert fut.failed() and not fut.succeeded() and fut.value is None
        assert fut.exception() is error
        with pytest.raises(KafkaTimeoutError, match="gone"):
            fut.get()
    assert "failed" in repr(futs[0])


def test_kafka_python_callbacks_get_their_args_first_and_chain() -> None:
    seen: list[Any] = []
    ok, bad = RecordFuture(IDIOM), RecordFuture(IDIOM)
    assert ok.add_callback(seen.append).add_errback(lambda e: seen.append(("err", e))) is ok
    bad.add_errback(lambda tag, e, *, n: seen.append((tag, type(e).__name__, n)), "errback", n=1)
    bad.add_callback(seen.append)  # never called: it failed
    ok.add_both(lambda x: seen.append(("both", x.offset)))
    fan_out(_batch([ok]))
    fan_out(_batch([bad], error=ValueError("no")))
    assert seen == [
        RecordMetadata("t", 2, 100, 1000),
        ("both", 100),
        ("errback", "ValueError", 1),
    ]
    late: list[Any] = []
    ok.add_done_callback(late.append)  # done already: called at once
    assert late == [ok]


def test_a_raising_callback_is_logged_and_the_others_run(caplog: Any) -> None:
    fut = RecordFuture(IDIOM)
    ran: list[int] = []
    fut.add_done_callback(lambda f: 1 / 0)
    fut.add_done_callback(lambda f: ran.append(1))
    with caplog.at_level(logging.ERROR, logger="kafkacore.producer"):
        fan_out(_batch([fut]))
    assert ran == [1]
    assert "delivery callback" in caplog.text


def test_fan_out_mixes_futures_many_results_callbacks_and_none() -> None:
    done: list[ManyResult] = []
    many = ManyResult("t", 3, done.append)
    calls: list[tuple[Any, Any]] = []
    fut = RecordFuture(IDIOM)

    def on_delivery(md: Any, error: Any) -> None:
        calls.append((md, error))

    fan_out(_batch([many, many, fut, on_delivery, None, many]))
    assert fut.result().offset == 102
    assert calls == [(RecordMetadata("t", 2, 103, 1003), None)]
    assert done == [many] and many.ranges == [(2, 100, 2), (2, 105, 1)]
    whole = ManyResult("t", 2, done.append)
    fan_out(_batch([whole, whole], base=7))
    assert whole.ranges == [(2, 7, 2)]


def test_fail_token_covers_every_kind_of_token() -> None:
    error = RuntimeError("closed")
    fut = RecordFuture(IDIOM)
    fail_token(fut, error)
    assert fut.exception() is error
    fail_token(fut, RuntimeError("again"))  # done already: kept
    assert fut.exception() is error
    calls: list[Any] = []
    fail_token(lambda md, e: calls.append((md, e)), error)
    assert calls == [(None, error)]
    many = ManyResult("t", 5, lambda r: None)
    many._add(0, 0, 2, None)
    fail_token(many, error)
    assert (many.count, many.failed, many.error) == (2, 3, error)
    light = LightFuture(IDIOM)
    light.fill("v", None)
    light.fill("w", None)
    assert light.result() == "v"


def test_async_idiom_futures_never_block() -> None:
    fut = RecordFuture(IDIOM)
    with pytest.raises(LocalProtocolError, match="still pending; await the future"):
        fut.result()
    with pytest.raises(LocalProtocolError, match="still pending"):
        fut.get(timeout=1)


class _Loop:
    def __init__(self) -> None:
        self.thread: threading.Thread | None = None

    @property
    def on_loop(self) -> bool:
        return threading.current_thread() is self.thread


def test_blocking_waits_are_refused_on_the_io_thread_and_bounded_elsewhere() -> None:
    lock = threading.RLock()
    loop = _Loop()
    idiom = ThreadIdiom("KafkaProducer", lock, loop)
    fut = RecordFuture(idiom)
    with pytest.raises(WaitTimeoutError, match=r"result\(\) not done within 0.01 s") as info:
        fut.result(timeout=0.01)
    assert isinstance(info.value, KafkaTimeoutError) and isinstance(info.value, TimeoutError)
    errors: list[BaseException] = []

    def on_io_thread() -> None:
        try:
            fut.get()
        except BaseException as exc:
            errors.append(exc)

    loop.thread = threading.Thread(target=on_io_thread)
    loop.thread.start()
    loop.thread.join(5)
    assert not loop.thread.is_alive()
    assert isinstance(errors[0], LocalProtocolError)
    assert "would wait for that very thread and deadlock" in str(errors[0])

    def fill_later() -> None:
        time.sleep(0.05)
        with lock:
            fan_out(_batch([fut]))
            idiom.filled()

    threading.Thread(target=fill_later).start()
    assert fut.result(timeout=5).offset == 100  # woken by filled(), not by the timeout


def test_a_broken_idiom_fails_waiters_instead_of_hanging() -> None:
    idiom = ThreadIdiom("KafkaProducer", threading.RLock(), _Loop())
    idiom.broken = LocalProtocolError("its loop thread died")
    with pytest.raises(LocalProtocolError, match="loop thread died"):
        RecordFuture(idiom).result()


# -- send_many's shapes (issue 13: never guess) ---------------------------------
def test_send_many_takes_key_value_tuples() -> None:
    values, keys = to_columns(((b"k1", b"v1"), (b"k2", b"v2")), None, None, "P.send_many")
    assert (values, keys) == ([b"v1", b"v2"], [b"k1", b"k2"])
    assert to_columns([], None, None, "P") == ([], None)
    assert to_columns(iter([(None, b"v")]), None, None, "P") == ([b"v"], [None])


def test_send_many_takes_columns_only_by_keyword() -> None:
    assert to_columns(None, None, [b"a", b"b"], "P") == ([b"a", b"b"], None)
    assert to_columns(None, (b"x", None), (b"a", b"b"), "P") == ([b"a", b"b"], [b"x", None])
    with pytest.raises(ValueError, match="1 keys for 2 values"):
        to_columns(None, [b"x"], [b"a", b"b"], "P")


@pytest.mark.parametrize(
    ("records", "keys", "values", "message"),
    [
        ((None, [b"v1", b"v2"]), None, None, r"records\[0\] is None; records must be \(key, va"),
        (([b"k1", b"k2"], [b"v1", b"v2"]), None, None, r"records\[0\] is a list of 2 item"),
        ([(b"k", b"v", b"x")], None, None, r"records\[0\] is a tuple of 3 item"),
        ([[b"k", b"v"]], None, None, r"records\[0\] is a list of 2 item"),
        (b"value", None, None, "iterable of \\(key, value\\) tuples, got bytes"),
        (5, None, None, "iterable of \\(key, value\\) tuples, got int"),
        ([(b"k", b"v")], None, [b"v"], "not both"),
        (None, [b"k"], None, "keys= needs values="),
        (None, None, None, "nothing to send"),
        (None, None, b"abc", "values= must be a list of values, got a bytes"),
    ],
)
def test_any_other_shape_is_refused_saying_what_is_expected(
    records: Any, keys: Any, values: Any, message: str
) -> None:
    with pytest.raises(TypeError, match=message):
        to_columns(records, keys, values, "KafkaProducer.send_many")


# -- kafka-python / aiokafka keywords -----------------------------------------------
def test_peer_keywords_map_to_kafkacore_options() -> None:
    out, metrics = peer_options(
        "P", {"max_batch_size": 1000, "client_id": None, "retries": float("inf"), "acks": 1}
    )
    assert out == {"batch_size": 1000, "retries": 2**31 - 1, "acks": 1}
    assert metrics is True
    out, metrics = peer_options(
        "P",
        {
            "metrics_enabled": False,
            "partitioner": None,
            "metric_reporters": [],
            "metrics_num_samples": 2,
            "client_dns_lookup": "use_all_dns_ips",
            "socks5_proxy": None,
            "loop": None,
        },
    )
    assert (out, metrics) == ({}, False)


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"partitioner": lambda *a: 0}, "partitioner=.* is not supported .*pass partition="),
        ({"socks5_proxy": "socks5://h:1"}, "socks5_proxy='socks5://h:1' is not supported"),
        ({"metrics_num_samples": 3}, "metrics_num_samples=3 is not supported"),
        ({"metrics_enabled": "yes"}, "metrics_enabled must be True or False"),
        ({"batch_size": 1, "max_batch_size": 2}, "batch_size or max_batch_size"),
    ],
)
def test_peer_keywords_without_an_equivalent_are_config_errors(
    options: dict[str, Any], message: str
) -> None:
    with pytest.raises(ProducerConfigError, match=message) as info:
        peer_options("KafkaProducer", options)
    assert isinstance(info.value, ValueError)
    assert str(info.value).startswith("KafkaProducer: ")
