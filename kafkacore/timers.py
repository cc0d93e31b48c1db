"""Named deadlines: the one timer helper every core machine uses.

A sans-IO machine never sleeps; it says when it next needs
``handle_timeout(now=...)`` (aioquic's ``get_timer``/``handle_timer``). A
machine usually has several reasons to wake (a retry backoff, an
auto-commit interval, a request timeout); :class:`Deadlines` keeps one
absolute time per named reason, answers the earliest, and hands back the
reasons that are due. Time always comes in as ``now``; nothing here reads a
clock.
"""

from __future__ import annotations

from collections.abc import Hashable
from typing import Generic, TypeVar

__all__ = ["Deadlines"]

K = TypeVar("K", bound=Hashable)


class Deadlines(Generic[K]):
    """One absolute deadline (seconds, the transport's clock) per key."""

    __slots__ = ("_at",)

    def __init__(self) -> None:
        self._at: dict[K, float] = {}

    def set(self, key: K, at: float) -> None:
        """Wake for ``key`` at ``at`` (replaces an earlier setting)."""
        self._at[key] = at

    def set_earliest(self, key: K, at: float) -> None:
        """Wake for ``key`` at ``at`` unless it is already due sooner."""
        current = self._at.get(key)
        if current is None or at < current:
            self._at[key] = at

    def cancel(self, key: K) -> None:
        """Forget ``key`` (no error if it was not set)."""
        self._at.pop(key, None)

    def get(self, key: K) -> float | None:
        """When ``key`` is due, or None."""
        return self._at.get(key)

    def next(self) -> float | None:
        """The earliest deadline, or None when nothing is armed."""
        return min(self._at.values()) if self._at else None

    def pop_due(self, now: float) -> list[K]:
        """Remove and return the keys due at ``now``, earliest first."""
        due = sorted((at, i, key) for i, (key, at) in enumerate(self._at.items()) if at <= now)
        for _, _, key in due:
            del self._at[key]
        return [key for _, _, key in due]

    def __contains__(self, key: object) -> bool:
        return key in self._at

    def __len__(self) -> int:
        return len(self._at)

    def __repr__(self) -> str:
        return f"<Deadlines {self._at!r}>"
