"""What the producers take as input beyond a record: ``send_many``'s shapes, peers' options.

Theory of operation
-------------------
:func:`to_columns` turns ``send_many``'s input into columns, taking exactly
one shape each way and refusing anything else with a message saying what
is expected (issue 13: a tuple of two pairs was once taken for a column
pair). :func:`peer_options` maps kafka-python's and aiokafka's producer
keywords onto kafkacore's, and refuses with a
:class:`~kafkacore.producer.errors.ProducerConfigError` the ones kafkacore has no
setting for unless they are at their neutral value.
"""

from __future__ import annotations

import selectors
from typing import Any

from kafkacore.producer.errors import ProducerConfigError

__all__ = ["peer_options", "to_columns"]


def to_columns(
    records: Any, keys: Any, values: Any, owner: str
) -> tuple[list[Any], list[Any] | None]:
    """``send_many`` input as ``(values, keys)`` lists; one explicit shape each way.

    Either ``records``, an iterable of ``(key, value)`` tuples (exactly
    tuples of two: nothing else is taken for a pair), or the columns by
    keyword, ``values=`` and optionally ``keys=`` (one per value; None: no
    keys). Anything else is a TypeError saying what is expected: the shape
    is never guessed.
    """
    if values is not None:
        if records is not None:
            raise TypeError(
                f"{owner}: give either records ((key, value) tuples) or values= (with keys=), "
                "not both"
            )
        vals = _column(values, "values", owner)
        if keys is None:
            return vals, None
        ks = _column(keys, "keys", owner)
        if len(ks) != len(vals):
            raise ValueError(f"{owner}: {len(ks)} keys for {len(vals)} values; give one per value")
        return vals, ks
    if keys is not None:
        raise TypeError(f"{owner}: keys= needs values= (one value per key)")
    if records is None:
        raise TypeError(
            f"{owner}: nothing to send; give records as (key, value) tuples, or values= "
            "(and keys=) as columns"
        )
    if isinstance(records, str | bytes | bytearray | memoryview | dict):
        raise TypeError(
            f"{owner}: records must be an iterable of (key, value) tuples, got "
            f"{type(records).__name__}"
        )
    try:
        rows = list(records)
    except TypeError:
        raise TypeError(
            f"{owner}: records must be an iterable of (key, value) tuples, got "
            f"{type(records).__name__}"
        ) from None
    for i, row in enumerate(rows):
        if type(row) is not tuple or len(row) != 2:
            raise TypeError(
                f"{owner}: records[{i}] is {_describe(row)}; records must be (key, value) "
                "tuples, e.g. [(b'k1', b'v1'), (None, b'v2')]; for columns use "
                "values=[...] and keys=[...]"
            )
    if not rows:
        return [], None
    ks_t, vals_t = zip(*rows, strict=True)
    return list(vals_t), list(ks_t)


def _column(col: Any, name: str, owner: str) -> list[Any]:
    if isinstance(col, str | bytes | bytearray | memoryview | dict) or not hasattr(col, "__iter__"):
        raise TypeError(f"{owner}: {name}= must be a list of {name}, got {_describe(col)}")
    return col if type(col) is list else list(col)


def _describe(obj: Any) -> str:
    if isinstance(obj, tuple | list):
        return f"a {type(obj).__name__} of {len(obj)} item(s)"
    return f"a {type(obj).__name__}" if obj is not None else "None"


#: kafka-python / aiokafka producer keywords kafkacore has no setting for:
#: accepted at the value that means what kafkacore does anyway (their
#: default, or None), refused otherwise with a ConfigError naming them.
_FIXED_PEER_OPTIONS: dict[str, tuple[tuple[Any, ...], str]] = {
    "partitioner": ((None,), "custom partitioners are not supported; pass partition= to send()"),
    "metric_reporters": ((None, [], ()), "metric reporters are not supported; read metrics()"),
    "metrics_num_samples": ((None, 2), "metrics() are counters, not sampled windows"),
    "metrics_sample_window_ms": ((None, 30000), "metrics() are counters, not sampled windows"),
    "selector": ((None, selectors.DefaultSelector), "the selector loop picks its own selector"),
    "client_dns_lookup": (
        (None, "use_all_dns_ips"),
        "every address of a name is tried in turn (use_all_dns_ips)",
    ),
    "sasl_kerberos_name": ((None,), "set sasl_kerberos_service_name / _domain_name instead"),
    "socks5_proxy": ((None,), "proxies are not supported"),
    "proxy_url": ((None,), "proxies are not supported"),
    "kafka_client": ((None,), "kafkacore brings its own network client"),
    "bootstrap_timeout_ms": ((None, 30000), "bootstrap retries until max_block_ms"),
    "receive_message_max_bytes": ((None, 100000000), "frames are bounded by the client core"),
    "loop": ((None,), "the producer binds to the running loop when started"),
}


def peer_options(owner: str, options: dict[str, Any]) -> tuple[dict[str, Any], bool]:
    """kafka-python's and aiokafka's producer keywords as kafkacore options.

    Same meaning, other name: ``max_batch_size`` (aiokafka) is
    ``batch_size``; ``client_id=None`` and ``retries=float('inf')``
    (kafka-python's defaults) are kafkacore's defaults. ``metrics_enabled``
    (False: ``metrics()`` answers ``{}``) is taken here. The keywords in
    ``_FIXED_PEER_OPTIONS`` are accepted at their neutral value only.
    Returns the options left for ``kafkacore.options`` and metrics_enabled.
    """
    out = dict(options)
    if "max_batch_size" in out:
        if "batch_size" in out:
            raise ProducerConfigError(
                f"{owner}: give batch_size or max_batch_size (aiokafka), not both"
            )
        out["batch_size"] = out.pop("max_batch_size")
    if "client_id" in out and out["client_id"] is None:
        del out["client_id"]
    if out.get("retries") == float("inf"):
        out["retries"] = 2**31 - 1
    metrics_enabled = out.pop("metrics_enabled", True)
    if not isinstance(metrics_enabled, bool):
        raise ProducerConfigError(
            f"{owner}: metrics_enabled must be True or False, got {metrics_enabled!r}"
        )
    for name, (neutral, why) in _FIXED_PEER_OPTIONS.items():
        if name not in out:
            continue
        value = out.pop(name)
        if not any(value is n or (type(value) is type(n) and value == n) for n in neutral):
            raise ProducerConfigError(
                f"{owner}: {name}={value!r} is not supported ({why}); leave it out"
            )
    return out, metrics_enabled
