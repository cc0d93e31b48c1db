"""What the next poll raises: the one error the user must act on.

The consumer's machines note failures the user has to hear about (no
offset and no reset policy, log truncation, a fatal group or fetch error,
refused credentials, an unreachable cluster) here; the next
``poll_records``/``poll_batches`` raises it once (Java's ``poll`` does the
same). Most notes keep the first error until it is raised; a few newer
facts replace it (:meth:`PollErrors.replace`), as noted where they are made.
"""

from __future__ import annotations

__all__ = ["PollErrors"]


class PollErrors:
    """A slot for one error, raised (and emptied) by the next poll."""

    __slots__ = ("_error",)

    def __init__(self) -> None:
        self._error: BaseException | None = None

    @property
    def pending(self) -> BaseException | None:
        return self._error

    def note(self, error: BaseException) -> None:
        """Keep ``error`` unless one is already waiting."""
        if self._error is None:
            self._error = error

    def replace(self, error: BaseException) -> None:
        """``error`` supersedes whatever was waiting."""
        self._error = error

    def clear(self) -> None:
        self._error = None

    def take(self) -> BaseException | None:
        """The waiting error, now handed to the poll that raises it."""
        error, self._error = self._error, None
        return error
