"""Producer configuration: one frozen dataclass, validated on construction.

Names and defaults follow the Java producer (``acks``, ``batch.size``,
``linger.ms``...) with underscores; durations are integer milliseconds. The
connection options (``bootstrap_servers``, SASL, TLS, ``client_id``...) are
the client's (:class:`~kafkacore.client.ClientConfig`) and are passed through
``client``.

Idempotence is on by default (Java since 3.0, KIP-679): it needs
``acks='all'``, ``retries > 0`` and at most 5 requests in flight per
connection; asking for idempotence together with a contradicting setting is
an error, leaving ``enable_idempotence`` at its default ``None`` turns it off
quietly instead, as Java does.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from kafkacore.producer.errors import ProducerConfigError
from kafkacore.records import Compression

__all__ = ["ProducerConfig"]

_COMPRESSION = {
    None: Compression.NONE,
    "none": Compression.NONE,
    "gzip": Compression.GZIP,
    "snappy": Compression.SNAPPY,
    "lz4": Compression.LZ4,
    "zstd": Compression.ZSTD,
}

# Options of the producer itself; everything else goes to ClientConfig.
PRODUCER_OPTIONS = frozenset(
    {
        "acks",
        "batch_size",
        "linger_ms",
        "buffer_memory",
        "max_request_size",
        "compression_type",
        "compression_level",
        "delivery_timeout_ms",
        "retries",
        "enable_idempotence",
        "transactional_id",
        "transaction_timeout_ms",
        "max_block_ms",
        "partitioner_ignore_keys",
    }
)


@dataclass(frozen=True, slots=True, kw_only=True)
class ProducerConfig:
    """Validated producer options; see the module docstring."""

    acks: int | str = "all"
    batch_size: int = 16384
    linger_ms: int = 5  # Java 4.0 default (KIP-1030)
    buffer_memory: int = 32 * 1024 * 1024
    max_request_size: int = 1024 * 1024
    compression_type: str | None = None
    compression_level: int | None = None
    delivery_timeout_ms: int = 120000
    retries: int = 2**31 - 1
    enable_idempotence: bool | None = None
    transactional_id: str | None = None
    transaction_timeout_ms: int = 60000
    max_block_ms: int = 60000
    partitioner_ignore_keys: bool = False
    #: Options for the network client (``ClientConfig`` keywords). Left out of
    #: the repr: it may hold passwords (``ClientConfig``'s own repr masks them).
    client: dict[str, Any] = field(default_factory=dict, repr=False)

    # Derived (set in __post_init__).
    acks_value: int = field(init=False, default=-1)
    compression: Compression = field(init=False, default=Compression.NONE)
    idempotent: bool = field(init=False, default=True)
    max_in_flight: int = field(init=False, default=5)

    def __post_init__(self) -> None:
        set_ = object.__setattr__
        acks = self.acks
        if acks in ("all", -1, "-1"):
            value = -1
        elif acks in (0, 1, "0", "1"):
            value = int(acks)
        else:
            raise ProducerConfigError(
                f"ProducerConfig: acks must be 0, 1 or 'all' (-1), got {acks!r}"
            )
        set_(self, "acks_value", value)
        for name in (
            "batch_size",
            "buffer_memory",
            "max_request_size",
            "delivery_timeout_ms",
            "transaction_timeout_ms",
        ):
            v = getattr(self, name)
            if isinstance(v, bool) or not isinstance(v, int) or v <= 0:
                raise ProducerConfigError(
                    f"ProducerConfig: {name} must be a positive int, got {v!r}"
                )
        for name in ("linger_ms", "max_block_ms", "retries"):
            v = getattr(self, name)
            if isinstance(v, bool) or not isinstance(v, int) or v < 0:
                raise ProducerConfigError(f"ProducerConfig: {name} must be an int >= 0, got {v!r}")
        ctype = self.compression_type.lower() if self.compression_type else None
        if ctype not in _COMPRESSION:
            raise ProducerConfigError(
                f"ProducerConfig: compression_type {self.compression_type!r} is not one of "
                "none, gzip, snappy, lz4, zstd"
            )
        set_(self, "compression", _COMPRESSION[ctype])
        if self.transactional_id is not None and (
            not isinstance(self.transactional_id, str) or not self.transactional_id
        ):
            raise ProducerConfigError(
                "ProducerConfig: transactional_id must be a non-empty string or None"
            )
        in_flight = int(self.client.get("max_in_flight_requests_per_connection", 5))
        set_(self, "max_in_flight", in_flight)
        conflicts = []
        if value != -1:
            conflicts.append(f"acks={acks!r} (needs 'all')")
        if self.retries == 0:
            conflicts.append("retries=0")
        if in_flight > 5:
            conflicts.append(f"max_in_flight_requests_per_connection={in_flight} (max 5)")
        wanted = self.enable_idempotence
        if self.transactional_id is not None:
            if wanted is False:
                raise ProducerConfigError(
                    "ProducerConfig: a transactional_id needs enable_idempotence; drop "
                    "enable_idempotence=False"
                )
            wanted = True
        if wanted and conflicts:
            raise ProducerConfigError(
                "ProducerConfig: idempotence cannot work with "
                + ", ".join(conflicts)
                + "; fix those or set enable_idempotence=False"
            )
        set_(self, "idempotent", bool(wanted if wanted is not None else not conflicts))
        if self.max_request_size < 100:
            raise ProducerConfigError("ProducerConfig: max_request_size must be at least 100 bytes")

    @property
    def transactional(self) -> bool:
        return self.transactional_id is not None


def split_options(owner: str, options: dict[str, Any]) -> ProducerConfig:
    """Build a ProducerConfig from a transport's keyword options (producer + client ones)."""
    mine = {k: v for k, v in options.items() if k in PRODUCER_OPTIONS}
    client = {k: v for k, v in options.items() if k not in PRODUCER_OPTIONS}
    try:
        return ProducerConfig(client=client, **mine)
    except ValueError as exc:
        raise ProducerConfigError(f"{owner}: {exc}") from None
