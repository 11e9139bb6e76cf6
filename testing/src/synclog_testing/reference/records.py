"""A record as the log tables see it, computed in plain Python from the documented rules.

Written from docs/analysts/layouts.md and the seeds, not from synclog's Spark code:

- `invalid_reason` is `NULL` for a record without an identifier and `DUPLICATE` for one whose
  identifier another record of the run holds (within a write at once; across the run's batches
  from `finish` on);
- `error_code` is the engine's (trimmed, empty means none), else, for a record that did not
  succeed, the first group of the sync's pattern over its message (docs/analysts/tracking.md);
- `log_id` is the first 32 hex digits of the SHA-256 of
  `sync_id ␟ sync_run_id ␟ batch_number ␟ identifier (or NUL) ␟ occurrence`, where `occurrence`
  numbers, from 1, the records of one batch sharing an identifier in the order of their
  operation, status, payload, message, error code, fields (the payload where none are given),
  split group, batch start and batch completion (NULL first, text by code point): the same
  records give the same ids on replay.
"""

from __future__ import annotations

import hashlib
import re
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from datetime import datetime
from typing import Any

from synclog.model import as_utc

DEFAULT_ERROR_PATTERN = r"^\s*([A-Za-z0-9_.\-]+(?: [A-Za-z0-9_.\-]+){0,5})\s*:"
"""docs/analysts/tracking.md: the words before a colon, at most six, of letters, digits and `_.-`."""
SEPARATOR = "\x1f"


@dataclass(frozen=True, repr=False)
class Record:
    """One record as a sync engine hands it over (the columns of `synclog.INPUT_SCHEMA`)."""

    record_identifier: str | None
    operation: str
    status: str
    status_message: str | None
    record_payload: str
    batch_number: int
    batch_started_at: datetime
    batch_completed_at: datetime
    fields: str | None = None
    split_group: str | None = None
    error_code: str | None = None

    def __repr__(self) -> str:
        """Short, for shrunk sequences: identifier, operation, status, batch and its start, payload."""
        extras = [
            f"{name}={getattr(self, name)!r}"
            for name in ("status_message", "fields", "split_group", "error_code")
            if getattr(self, name) is not None
        ]
        started = as_utc(self.batch_started_at)
        shown = [repr(self.record_identifier), self.operation, self.status]
        shown += [f"batch {self.batch_number} at {started:%m-%d %H:%M}", self.record_payload, *extras]
        return f"Record({', '.join(shown)})"

    def as_input(self) -> dict[str, Any]:
        """The record as a dict for `SyncLog.write` (optional columns only where set)."""
        row: dict[str, Any] = {
            "record_identifier": self.record_identifier,
            "operation": self.operation,
            "status": self.status,
            "status_message": self.status_message,
            "record_payload": self.record_payload,
            "batch_number": self.batch_number,
            "batch_started_at": self.batch_started_at,
            "batch_completed_at": self.batch_completed_at,
        }
        for name in ("fields", "split_group", "error_code"):
            if getattr(self, name) is not None:
                row[name] = getattr(self, name)
        return row


@dataclass(frozen=True)
class Logged:
    """A record with what the core adds: its flag, error code and log id."""

    record: Record
    sync_id: int
    sync_run_id: int
    invalid_reason: str | None
    error_code: str | None
    log_id: str

    @property
    def identifier(self) -> str | None:
        return self.record.record_identifier

    @property
    def batch(self) -> int:
        return self.record.batch_number

    @property
    def fields(self) -> str:
        """The model's row: `fields` when the engine gave them, else the payload."""
        given = self.record.fields
        return self.record.record_payload if given is None else given

    def flagged(self, reason: str) -> Logged:
        """The record with `reason` as its flag, unless it has one already."""
        return self if self.invalid_reason is not None else replace(self, invalid_reason=reason)


def _order_key(record: Record, error_code: str | None) -> tuple[Any, ...]:
    """NULL first, then by value: how the occurrence of records sharing an identifier is counted
    (`error_code` is the logged one, `fields` the model's row)."""
    values = (
        record.operation,
        record.status,
        record.record_payload,
        record.status_message,
        error_code,
        record.record_payload if record.fields is None else record.fields,
        record.split_group,
        as_utc(record.batch_started_at),
        as_utc(record.batch_completed_at),
    )
    return tuple((value is not None, value if value is not None else "") for value in values)


def log_id(sync_id: int, sync_run_id: int, batch: int, identifier: str | None, occurrence: int) -> str:
    """The documented log id (see the module docstring)."""
    parts = (str(sync_id), str(sync_run_id), str(batch), identifier if identifier is not None else "\x00")
    text = SEPARATOR.join((*parts, str(occurrence)))
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:32]


def error_code_of(record: Record, pattern: str = DEFAULT_ERROR_PATTERN) -> str | None:
    """The engine's error code, else the pattern's first group of a failed record's message."""
    given = (record.error_code or "").strip(" ")
    if given:
        return given
    if record.status == "succeeded" or record.status_message is None:
        return None
    found = re.search(pattern, record.status_message)
    return (found.group(1) or None) if found else None


def logged(
    sync_id: int, sync_run_id: int, records: Sequence[Record], pattern: str = DEFAULT_ERROR_PATTERN
) -> list[Logged]:
    """The records of one write, flagged among themselves, with error codes and log ids."""
    counts = Counter(r.record_identifier for r in records if r.record_identifier is not None)
    coded = [(record, error_code_of(record, pattern)) for record in records]
    occurrences: dict[tuple[int, str | None], int] = {}
    result = []
    for record, code in sorted(coded, key=lambda rc: (rc[0].batch_number, _order_key(*rc))):
        key = (record.batch_number, record.record_identifier)
        occurrences[key] = occurrences.get(key, 0) + 1
        identifier = record.record_identifier
        reason = "NULL" if identifier is None else ("DUPLICATE" if counts[identifier] > 1 else None)
        result.append(
            Logged(
                record,
                sync_id,
                sync_run_id,
                reason,
                code,
                log_id(sync_id, sync_run_id, record.batch_number, identifier, occurrences[key]),
            )
        )
    return result


def repeated_across_batches(batches: Mapping[int, Sequence[Logged]]) -> set[str]:
    """Identifiers that more than one batch holds."""
    holders: dict[str, set[int]] = {}
    for number, records in batches.items():
        for r in records:
            if r.identifier is not None:
                holders.setdefault(r.identifier, set()).add(number)
    return {identifier for identifier, numbers in holders.items() if len(numbers) > 1}


def chosen_copy(records: Iterable[Logged]) -> Logged:
    """Which of a run's records of one identifier stands for the row: the latest batch's, and
    in it the first in the occurrence order (so the choice never depends on ids)."""
    return min(records, key=lambda r: (-r.batch, _order_key(r.record, r.error_code)))
