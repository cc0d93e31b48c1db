"""aiokafka's ``aiokafka.admin.records_to_delete``."""

from __future__ import annotations

__all__ = ["RecordsToDelete"]


class RecordsToDelete:
    """Delete the records of a partition before ``before_offset`` (-1: all)."""

    def __init__(self, before_offset: int) -> None:
        self.before_offset = before_offset

    def __repr__(self) -> str:
        return f"RecordsToDelete(before_offset={self.before_offset})"
