"""Progress of long work on stderr: a bar on a terminal, plain lines elsewhere.

On a terminal (stderr is a tty) a known amount of work is click's progress
bar, redrawn in place with ``\\r``; an unknown amount is a counter redrawn the
same way. Anywhere else (a pipe, a file, CI logs) nothing is redrawn: one
plain line every ``interval`` seconds and one at the end, so a log stays
readable. stdout is never touched: it carries the records or the result.
"""

from __future__ import annotations

import sys
import time
from types import TracebackType
from typing import IO, Any

import click

__all__ = ["Progress", "is_terminal"]


def is_terminal(stream: IO[str] | None = None) -> bool:
    stream = sys.stderr if stream is None else stream
    try:
        return stream.isatty()
    except (AttributeError, ValueError):
        return False


class Progress:
    """Counts work done out of ``total`` (None: unknown) and shows it on stderr."""

    def __init__(
        self,
        label: str,
        total: int | None,
        *,
        unit: str = "records",
        interval: float = 5.0,
        enabled: bool = True,
        stream: IO[str] | None = None,
    ) -> None:
        self.label = label
        self.total = total
        self.unit = unit
        self.done = 0
        self._stream = sys.stderr if stream is None else stream
        self._enabled = enabled
        self._tty = enabled and is_terminal(self._stream)
        self._interval = interval
        self._last = time.monotonic()
        self._bar: Any = None
        self._pending = 0
        if self._tty and total is not None:
            self._bar = click.progressbar(
                length=total,
                label=label,
                file=self._stream,  # type: ignore[arg-type]
                show_pos=True,
                show_percent=True,
                show_eta=True,
                width=30,
            )
            self._bar.__enter__()

    @property
    def terminal(self) -> bool:
        """Whether the display is a redrawn bar (True) or plain lines (False)."""
        return self._tty

    def advance(self, n: int = 1) -> None:
        self.done += n
        if not self._enabled or n <= 0:
            return
        now = time.monotonic()
        if self._bar is not None:
            # Redraw at most 10 times a second: a record-by-record redraw would cost
            # more than the work it reports.
            self._pending += n
            if now - self._last >= 0.1:
                self._bar.update(self._pending)
                self._pending = 0
                self._last = now
            return
        if now - self._last < (0.2 if self._tty else self._interval):
            return
        self._last = now
        if self._tty:
            self._stream.write(f"\r{self.label}: {self.done} {self.unit}")
            self._stream.flush()
        else:
            self._line()

    def _line(self) -> None:
        of = f"/{self.total}" if self.total is not None else ""
        click.echo(f"{self.label}: {self.done}{of} {self.unit}", file=self._stream)

    def close(self) -> None:
        """Finish the display: the bar at its end, or a last plain line."""
        if not self._enabled:
            return
        if self._bar is not None:
            self._bar.update(self._pending)
            self._bar.__exit__(None, None, None)
            self._bar = None
        elif self._tty:
            self._stream.write(f"\r{self.label}: {self.done} {self.unit}\n")
            self._stream.flush()
        else:
            self._line()
        self._enabled = False

    def __enter__(self) -> Progress:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()
