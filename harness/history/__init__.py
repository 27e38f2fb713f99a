"""Histories: one JSON object per line, Jepsen-style operations (see `schema`)."""

from harness.history.schema import Op, SCHEMA_VERSION
from harness.history.store import HistoryWriter, read_history

__all__ = ["Op", "SCHEMA_VERSION", "HistoryWriter", "read_history"]
