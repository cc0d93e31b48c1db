"""Per-item results: what one topic, group, partition or resource came to.

An admin request usually names several things (topics to create, groups to
describe). The broker answers each one on its own: one topic may be created
while the next already exists. Like the Java admin client's per-item futures,
an operation's value then maps every item to an :class:`ItemResult`, holding
either that item's value or that item's own error. The operation itself
fails only when the request as a whole failed (no broker reachable, the
deadline passed before any answer, authentication refused).
"""

from __future__ import annotations

from collections.abc import Hashable, Iterator, Mapping
from dataclasses import dataclass
from typing import Generic, TypeVar

__all__ = ["ItemResult", "ItemResults"]

K = TypeVar("K", bound=Hashable)
T = TypeVar("T")


@dataclass(frozen=True, slots=True)
class ItemResult(Generic[T]):
    """One item's outcome: ``value`` when ``error`` is None."""

    value: T | None = None
    error: BaseException | None = None

    @property
    def ok(self) -> bool:
        """True when the item succeeded."""
        return self.error is None

    def result(self) -> T:
        """The value; raises the item's error if it failed."""
        if self.error is not None:
            raise self.error
        return self.value  # type: ignore[return-value]


class ItemResults(Mapping[K, ItemResult[T]]):
    """An immutable mapping of each item to its :class:`ItemResult`, in request order."""

    __slots__ = ("_items",)

    def __init__(self, items: Mapping[K, ItemResult[T]]) -> None:
        self._items = dict(items)

    def __getitem__(self, key: K) -> ItemResult[T]:
        return self._items[key]

    def __iter__(self) -> Iterator[K]:
        return iter(self._items)

    def __len__(self) -> int:
        return len(self._items)

    def all(self) -> dict[K, T]:
        """Every item's value; raises the first item error (in request order)."""
        return {key: item.result() for key, item in self._items.items()}

    @property
    def errors(self) -> dict[K, BaseException]:
        """The items that failed, with their errors."""
        return {k: item.error for k, item in self._items.items() if item.error is not None}

    @property
    def succeeded(self) -> dict[K, T]:
        """The items that succeeded, with their values."""
        return {k: item.value for k, item in self._items.items() if item.error is None}  # type: ignore[misc]

    def __repr__(self) -> str:
        parts = ", ".join(
            f"{k!r}: {'ok' if item.ok else type(item.error).__name__}"
            for k, item in self._items.items()
        )
        return f"ItemResults({{{parts}}})"
