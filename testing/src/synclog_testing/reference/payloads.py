"""What becomes of a record's payload on its way to the tables, in plain Python: the sync's
payload policy (docs/analysts/privacy.md) and a target's JSON size limit.

Where the docs are silent the model states the choice it makes, each with a hand-worked case in
tests/test_reference_model.py:

- a payload the policy rewrites is written again as compact JSON (`,` and `:` without spaces),
  its keys in their order, non-ASCII characters as they are;
- a payload longer than a target's limit (`Capabilities.max_json_bytes`, in UTF-8 bytes) becomes
  the marker object `{"_synclog_truncated": true, "original_bytes": …, "sha256": …, "head": …}`,
  `head` its first characters: a sixteenth of the limit, at least 16 and at most 16,383.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import re
from dataclasses import replace
from typing import Any

from synclog.privacy import PayloadPolicy
from synclog_testing.reference.records import Record

REDACTED = "[redacted]"
MAX_HEAD_CHARS = 16_383


def fit_json(text: str | None, max_bytes: int | None) -> str | None:
    """`text` as a target whose JSON values hold at most `max_bytes` keeps it."""
    if text is None or max_bytes is None:
        return text
    size = len(text.encode("utf-8"))
    if size <= max_bytes:
        return text
    head = max(16, min(max_bytes // 16, MAX_HEAD_CHARS))
    marker = {
        "_synclog_truncated": True,
        "original_bytes": size,
        "sha256": hashlib.sha256(text.encode("utf-8")).hexdigest(),
        "head": text[:head],
    }
    return json.dumps(marker, ensure_ascii=False)


def digest(key: bytes, text: str) -> str:
    """The keyed HMAC-SHA256 hex digest docs/analysts/privacy.md gives: `hmac.new(key, text, sha256)`."""
    return hmac.new(key, text.encode("utf-8"), hashlib.sha256).hexdigest()


def redacted(policy: PayloadPolicy, text: str | None) -> str | None:
    """A status message or run error with every match of `redact_messages` as "[redacted]"."""
    if text is None:
        return None
    for pattern in policy.redact_messages:
        text = re.sub(pattern, REDACTED, text)
    return text


def masked(policy: PayloadPolicy, key: bytes | None, record: Record) -> Record:
    """`record` as the policy lets it be logged: its identifier a digest (`mask_identifier`), its
    payload and fields cut to `log_fields` and masked, its message redacted."""
    identifier = record.record_identifier
    if policy.mask_identifier is not None and identifier is not None:
        identifier = digest(_key(key), identifier)
    return replace(
        record,
        record_identifier=identifier,
        record_payload=_payload(policy, key, record.record_payload),  # type: ignore[arg-type]
        fields=None if record.fields is None else _payload(policy, key, record.fields),
        status_message=redacted(policy, record.status_message),
    )


def _payload(policy: PayloadPolicy, key: bytes | None, text: str) -> str | None:
    """A payload's JSON text under the policy: top-level fields of `log_fields` only, each of
    `mask` as "[redacted]" or the digest of its text (a string as it is, anything else as its
    compact JSON with sorted keys; NULL stays NULL). A payload that is no object has no fields to
    keep: NULL where `log_fields` is set, else as it is."""
    value = json.loads(text)
    if not isinstance(value, dict):
        return None if policy.log_fields is not None else text
    if policy.log_fields is None and not policy.mask:
        return text
    if policy.log_fields is not None:
        value = {name: v for name, v in value.items() if name in policy.log_fields}
    for name, how in policy.mask.items():
        if value.get(name) is not None:
            value[name] = REDACTED if how == "redact" else digest(_key(key), _text(value[name]))
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


def _text(value: Any) -> str:
    if isinstance(value, str):
        return value
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"), sort_keys=True)


def _key(key: bytes | None) -> bytes:
    if key is None:
        raise ValueError("the policy masks by HMAC: give the model its key")
    return key
