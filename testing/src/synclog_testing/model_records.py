"""What the model tests' sequences write (`synclog_testing.model_machine`): records, their
payloads, the forms an engine hands them over in, and the payload policies a sync may have.

Payloads change between writes as a model's columns change between runs: a field added, one
gone, a value turning NULL, text, an array, an object or a boolean, or `fields` (the model's row)
given apart from the payload, for every record of a write or some. A sequence's identifiers and
values may be non-ASCII text; a payload may be longer than a target's JSON size limit
(`SMALL_JSON_BYTES`).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from datetime import timedelta
from typing import Any

import pandas as pd
import pyarrow as pa
from hypothesis import strategies as st

from synclog.model import Run
from synclog.privacy import Mask, PayloadPolicy
from synclog.records import INPUT_SCHEMA
from synclog_testing.factories import RECORD_COLUMNS
from synclog_testing.reference import Record

ASCII = ("a", "b", "c", "d")
UNICODE = ("a", "ß", "日本", "🙂")
"""A sequence's identifiers: four, so records of a run collide; plain or not."""
MESSAGES = ("INVALID_EMAIL: bad address", "rate limited", None)
UNICODE_TEXT = "Zoë 🙂 日本語 ß"
OPERATIONS = ("upsert", "upsert", "update", "delete", "create", "append", "mirror")
CHANGES: dict[str, dict[str, Any]] = {
    "plan added": {"plan": "pro"},
    "v null": {"v": None},
    "v text": {"v": "two"},
    "tags": {"tags": ["x", "y"]},
    "address": {"address": {"city": "Köln", "zip": 50667}},
    "vip": {"vip": True},
    "name": {"name": UNICODE_TEXT},
}
"""How a write's payloads may differ from the plain `{"id", "v"}`."""
SMALL_JSON_BYTES = 400
"""A JSON size limit some sequences give their target (`Capabilities.max_json_bytes`)."""
BLOB_CHARS = 600
"""How many characters an oversized payload's blob has ("x" or "ü": 600 or 1,200 UTF-8 bytes, past
`SMALL_JSON_BYTES` either way)."""
FORMS = ("dicts", "dicts", "pandas", "arrow")
"""How a write hands its records over (`synclog.batches`)."""

MASK_KEY_ENV = "SYNCLOG_MODEL_MASK_KEY"
MASK_KEY = "synclog-model-mask-key-0123456789"
POLICIES = (
    PayloadPolicy(
        log_fields=("id", "v", "tags", "name"),
        mask={"v": Mask.HMAC},
        mask_key_env=MASK_KEY_ENV,
        redact_messages=(r"bad \w+", r"unreachable"),
        mask_identifier=Mask.HMAC,
    ),
    PayloadPolicy(
        mask={"address": Mask.HMAC, "id": Mask.REDACT, "tags": Mask.HMAC},
        mask_key_env=MASK_KEY_ENV,
        redact_messages=(r"^INVALID_\w+",),
    ),
)
"""A sync's payload policies (docs/analysts/privacy.md): one logs some fields, masks one (a number,
NULL or text) and the identifiers, and redacts messages; the other masks an object and an array
(digests of their JSON text), redacts a field, and redacts the error code's part of a message (the
code is read from the message as the policy left it)."""


@st.composite
def batches_of(
    draw: st.DrawFn, run: Run, numbers: list[int], identifiers: Sequence[str], shift_days: int = 0
) -> list[Record]:
    """One to four records for each batch in `numbers`, of one payload shape."""
    changes = draw(st.lists(st.sampled_from(sorted(CHANGES)), max_size=2, unique=True), "payload changes")
    fields_given = draw(st.sampled_from(("none", "none", "none", "all", "some")), "fields given")
    records = []
    for number in numbers:
        started = run.started_at + timedelta(minutes=number, days=shift_days)
        for _ in range(draw(st.integers(1, 4))):
            identifier = draw(st.sampled_from((*identifiers, None)))
            status = draw(st.sampled_from(("succeeded", "succeeded", "rejected", "aborted")))
            version = draw(st.integers(0, 2))
            payload: dict[str, Any] = {"id": identifier, "v": version}
            for change in changes:
                payload |= CHANGES[change]
            if draw(st.integers(0, 9)) == 0:
                payload["blob"] = draw(st.sampled_from(("x", "ü"))) * BLOB_CHARS
            with_fields = fields_given == "all" or (fields_given == "some" and draw(st.booleans()))
            records.append(
                Record(
                    record_identifier=identifier,
                    operation=draw(st.sampled_from(OPERATIONS)),
                    status=status,
                    status_message=draw(st.sampled_from(MESSAGES)) if status == "rejected" else None,
                    record_payload=json.dumps(payload, ensure_ascii=draw(st.booleans())),
                    batch_number=number,
                    batch_started_at=started,
                    batch_completed_at=started + timedelta(seconds=30),
                    fields=json.dumps({"id": identifier, "v": version}) if with_fields else None,
                    split_group=draw(st.sampled_from((None, None, None, "control"))),
                    error_code=draw(st.sampled_from((None, None, "E42"))) if status == "rejected" else None,
                )
            )
    return records


def handed_over(records: Sequence[Record], form: str) -> Any:
    """`records` as an engine hands them to `SyncLog.write`: dicts (optional columns only where
    set), a pandas DataFrame or an Arrow table (the required columns, also of no records, and
    each optional one a record of the write has)."""
    rows = [r.as_input() for r in records]
    if form == "dicts":
        return rows
    names = [n for n in INPUT_SCHEMA.fieldNames() if n in RECORD_COLUMNS or any(n in row for row in rows)]
    if form == "arrow":
        return pa.table({n: [row.get(n) for row in rows] for n in names})
    return pd.DataFrame([{n: row.get(n) for n in names} for row in rows], columns=names)


def shape(record: Record) -> frozenset[str]:
    """The top-level fields of a record's payload."""
    return frozenset(json.loads(record.record_payload))


def oversized(record: Record) -> bool:
    """Whether the record's payload is longer than `SMALL_JSON_BYTES`."""
    return len(record.record_payload.encode("utf-8")) > SMALL_JSON_BYTES
