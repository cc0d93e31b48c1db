"""Exponential reconnect backoff with jitter (seed 004, Java KIP-144).

The n-th consecutive failure (n >= 1) waits
``min(base * 2**(n-1), max)`` milliseconds, scaled by a factor drawn
uniformly from [0.8, 1.2] with the injected ``random.Random`` so that many
clients that lost the same broker do not reconnect in lockstep. The result
never exceeds ``max * 1.2`` and is never below ``base * 0.8``.
"""

from __future__ import annotations

import random

__all__ = ["JITTER", "ExponentialBackoff"]

#: +-20% randomization, as the seed's reconnect_backoff_max_ms describes.
JITTER = 0.2


class ExponentialBackoff:
    """Pure backoff calculator; holds no state besides its parameters."""

    __slots__ = ("base_ms", "jitter", "max_ms")

    def __init__(self, base_ms: int, max_ms: int, *, jitter: float = JITTER) -> None:
        if base_ms < 0 or max_ms < base_ms:
            raise ValueError(
                f"ExponentialBackoff: need 0 <= base_ms <= max_ms, got {base_ms}, {max_ms}"
            )
        if not 0 <= jitter < 1:
            raise ValueError(f"ExponentialBackoff: jitter {jitter} must be in [0, 1)")
        self.base_ms = base_ms
        self.max_ms = max_ms
        self.jitter = jitter

    def delay_ms(self, failures: int, rng: random.Random) -> float:
        """Milliseconds to wait after ``failures`` consecutive failures (0 = none)."""
        if failures <= 0 or self.base_ms == 0:
            return 0.0
        # Cap the exponent so that 2**n cannot grow without bound.
        exp = min(failures - 1, 62)
        raw = min(self.base_ms * (1 << exp), self.max_ms)
        factor = 1.0 + rng.uniform(-self.jitter, self.jitter)
        return float(raw * factor)

    def bounds_ms(self, failures: int) -> tuple[float, float]:
        """The [low, high] range :meth:`delay_ms` can return (for tests and docs)."""
        if failures <= 0 or self.base_ms == 0:
            return (0.0, 0.0)
        raw = min(self.base_ms * (1 << min(failures - 1, 62)), self.max_ms)
        return (raw * (1 - self.jitter), raw * (1 + self.jitter))
