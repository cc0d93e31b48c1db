"""Arguments and results of the client-quota (KIP-546) and SCRAM-credential
(KIP-554) commands."""

from __future__ import annotations

import enum
import hashlib
from collections.abc import Mapping
from dataclasses import dataclass, field

from kafkacore.admin._checks import check_int, check_mapping, check_str

__all__ = [
    "ClientQuotaEntity",
    "ClientQuotaFilter",
    "ScramCredentialDeletion",
    "ScramCredentialInfo",
    "ScramCredentialUpsertion",
    "ScramMechanism",
]

#: Kafka's bounds on SCRAM iterations (ScramMechanism.minIterations, KIP-554's maximum).
MIN_ITERATIONS = 4096
MAX_ITERATIONS = 16384


@dataclass(frozen=True, slots=True)
class ClientQuotaEntity:
    """Whom a quota applies to: entity type -> name, None for that type's default
    (types: ``user``, ``client-id``, ``ip``)."""

    parts: tuple[tuple[str, str | None], ...]

    @classmethod
    def of(cls, entity: Mapping[str, str | None]) -> ClientQuotaEntity:
        """``{"user": "alice"}``, ``{"user": None, "client-id": "app"}``, ..."""
        parts = []
        for entity_type, name in check_mapping("ClientQuotaEntity", entity).items():
            check_str("ClientQuotaEntity entity type", entity_type)
            if name is not None:
                check_str(f"ClientQuotaEntity[{entity_type!r}]", name, empty=True)
            parts.append((entity_type, name))
        if not parts:
            raise ValueError("ClientQuotaEntity: name at least one entity type")
        return cls(tuple(sorted(parts)))

    def as_dict(self) -> dict[str, str | None]:
        return dict(self.parts)


class _Match(enum.IntEnum):
    """DescribeClientQuotas' MatchType."""

    EXACT = 0
    DEFAULT = 1
    SPECIFIED = 2


@dataclass(frozen=True, slots=True)
class ClientQuotaFilter:
    """One component of a quota lookup: an entity type matching one name, the
    type's default entity, or any named entity of that type."""

    entity_type: str
    match_type: int = _Match.SPECIFIED
    match: str | None = None

    @classmethod
    def named(cls, entity_type: str, name: str) -> ClientQuotaFilter:
        return cls(check_str("ClientQuotaFilter entity type", entity_type), _Match.EXACT, name)

    @classmethod
    def default(cls, entity_type: str) -> ClientQuotaFilter:
        return cls(check_str("ClientQuotaFilter entity type", entity_type), _Match.DEFAULT)

    @classmethod
    def any(cls, entity_type: str) -> ClientQuotaFilter:
        return cls(check_str("ClientQuotaFilter entity type", entity_type), _Match.SPECIFIED)


class ScramMechanism(enum.IntEnum):
    """Kafka's ScramMechanism ids, and the hash each uses."""

    UNKNOWN = 0
    SCRAM_SHA_256 = 1
    SCRAM_SHA_512 = 2

    @property
    def hash_name(self) -> str:
        return {1: "sha256", 2: "sha512"}[self.value]


def _mechanism(what: str, value: object) -> ScramMechanism:
    if not isinstance(value, ScramMechanism) or value is ScramMechanism.UNKNOWN:
        raise TypeError(f"{what}: expected SCRAM_SHA_256 or SCRAM_SHA_512, got {value!r}")
    return value


@dataclass(frozen=True, slots=True, kw_only=True)
class ScramCredentialInfo:
    mechanism: ScramMechanism
    iterations: int


@dataclass(frozen=True, slots=True, kw_only=True)
class ScramCredentialUpsertion:
    """Set a user's SCRAM password for one mechanism.

    The salt is the caller's to draw, from a secure source (``os.urandom(32)``):
    the core draws no randomness of its own. The password never travels:
    only the salted password (PBKDF2, RFC 5802's ``Hi``) does.
    """

    user: str
    mechanism: ScramMechanism
    password: str = field(repr=False)
    salt: bytes = field(repr=False)
    iterations: int = MIN_ITERATIONS

    def __post_init__(self) -> None:
        check_str("ScramCredentialUpsertion.user", self.user)
        _mechanism("ScramCredentialUpsertion.mechanism", self.mechanism)
        check_str("ScramCredentialUpsertion.password", self.password)
        if not isinstance(self.salt, bytes) or not self.salt:
            raise TypeError(
                "ScramCredentialUpsertion.salt: expected non-empty bytes (os.urandom(32))"
            )
        iterations = check_int(
            "ScramCredentialUpsertion.iterations", self.iterations, minimum=MIN_ITERATIONS
        )
        if iterations > MAX_ITERATIONS:
            raise ValueError(
                f"ScramCredentialUpsertion.iterations: {iterations} is above {MAX_ITERATIONS}"
            )

    def salted_password(self) -> bytes:
        return hashlib.pbkdf2_hmac(
            self.mechanism.hash_name, self.password.encode(), self.salt, self.iterations
        )


@dataclass(frozen=True, slots=True, kw_only=True)
class ScramCredentialDeletion:
    """Remove a user's SCRAM credential for one mechanism."""

    user: str
    mechanism: ScramMechanism

    def __post_init__(self) -> None:
        check_str("ScramCredentialDeletion.user", self.user)
        _mechanism("ScramCredentialDeletion.mechanism", self.mechanism)
