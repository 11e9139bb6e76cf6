"""The payload policy: what of each record is logged, applied on the executors before anything is written.

A `PayloadPolicy` (per sync in synclog.toml, or given to `SyncLog`) keeps only the top-level
payload fields of `log_fields`, masks fields (`hmac`: a keyed HMAC-SHA256 hex digest; `redact`:
"[redacted]"), redacts regex matches in status messages, and masks identifiers when asked.
Plugins add their own rules through the `synclog_transform_payload` hook.

On the driver, `PayloadPolicy.prepare` reads the key from the environment and gathers the hook's
implementations into a `PayloadTransform`; Spark ships that object to the executors inside the
function of one `mapInArrow` step, which rewrites the canonical frame's columns before any
shuffle, spool, staging file or target sees them. The key is never written, logged or shown
(`repr` hides it); it travels only inside the serialised function, as every Python closure does.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import os
import re
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from enum import StrEnum
from functools import cached_property
from typing import Any

import pyarrow as pa
from pyspark.sql import DataFrame

from synclog.errors import ConfigError

REDACTED = "[redacted]"
MIN_KEY_BYTES = 16
"""A shorter key could be guessed as easily as the values it protects."""
PAYLOAD_COLUMNS = ("record_payload", "fields")


class Mask(StrEnum):
    """How a masked value is logged."""

    HMAC = "hmac"
    """Keyed HMAC-SHA256 hex digest: the same value gives the same digest, so it still joins."""
    REDACT = "redact"
    """The text "[redacted]"."""


@dataclass(frozen=True)
class PayloadPolicy:
    """What of each record a sync logs. The empty policy logs everything as given.

    Field names are top-level payload fields: a nested object is kept, masked or dropped whole.
    A masked value that is not a string is masked as its JSON text; NULL stays NULL.
    """

    log_fields: tuple[str, ...] | None = None
    """Only these top-level fields of `record_payload` and `fields` are logged (None: all)."""
    mask: Mapping[str, Mask] = field(default_factory=dict)
    mask_key_env: str | None = None
    """The environment variable holding the HMAC key (at least 16 bytes)."""
    redact_messages: tuple[str, ...] = ()
    """Regular expressions whose matches in status messages and run errors become "[redacted]"."""
    mask_identifier: Mask | None = None
    """`Mask.HMAC` to log identifiers as digests; they are the join key, so never masked otherwise."""

    def __post_init__(self) -> None:
        masks = {}
        for name, how in self.mask.items():
            if how not in tuple(Mask):
                raise ConfigError(f"mask.{name} must be one of {', '.join(Mask)}, got {how!r}")
            masks[name] = Mask(how)
        if self.mask_identifier not in (None, Mask.HMAC):
            raise ConfigError(f'mask_identifier can only be "hmac", got {self.mask_identifier!r}')
        identifier = None if self.mask_identifier is None else Mask(self.mask_identifier)
        # Frozen: normalise what the Python API may give as plain strings and lists.
        object.__setattr__(self, "mask", masks)
        object.__setattr__(self, "mask_identifier", identifier)
        object.__setattr__(self, "redact_messages", tuple(self.redact_messages))
        if self.log_fields is not None:
            object.__setattr__(self, "log_fields", tuple(self.log_fields))
        if self.uses_hmac and not self.mask_key_env:
            raise ConfigError(
                "hmac needs a key: set mask_key_env to the environment variable that holds it (an unkeyed "
                "hash of an email or phone number is brute-forceable)"
            )
        self.patterns  # noqa: B018 - an invalid regex fails here, naming it

    @property
    def uses_hmac(self) -> bool:
        """Whether anything is masked by HMAC (and a key is needed)."""
        return Mask.HMAC in (*self.mask.values(), self.mask_identifier)

    @cached_property
    def patterns(self) -> tuple[re.Pattern[str], ...]:
        """`redact_messages`, compiled."""
        compiled = []
        for pattern in self.redact_messages:
            try:
                compiled.append(re.compile(pattern))
            except re.error as exc:
                raise ConfigError(f"redact_messages: {pattern!r} is not a valid regex ({exc})") from None
        return tuple(compiled)

    def redact_message(self, text: str | None) -> str | None:
        """`text` with every match of `redact_messages` replaced by "[redacted]"."""
        if text is None:
            return None
        for pattern in self.patterns:
            text = pattern.sub(REDACTED, text)
        return text

    def key(self) -> Key | None:
        """The HMAC key from `mask_key_env`, when the policy needs one.

        Raises ConfigError, naming the variable (never its value), when it is unset or short.
        """
        if not self.uses_hmac:
            return None
        assert self.mask_key_env is not None
        value = os.environ.get(self.mask_key_env, "").encode()
        if len(value) < MIN_KEY_BYTES:
            state = "is not set" if not value else f"holds fewer than {MIN_KEY_BYTES} bytes"
            raise ConfigError(f"mask_key_env: the environment variable {self.mask_key_env} {state}")
        return Key(value)

    def search_terms(self, identifier: str) -> tuple[str, ...]:
        """What an identifier may be logged as: itself and, when identifiers are logged as digests
        and the key is at hand, its digest (readers without the key search by digest)."""
        if self.mask_identifier is None or not os.environ.get(self.mask_key_env or ""):
            return (identifier,)
        key = self.key()
        assert key is not None
        return (identifier, key.digest(identifier))

    def prepare(self, sync_id: int, hooks: tuple[HookCall, ...] = ()) -> PayloadTransform | None:
        """What the executors apply for `sync_id`, or None when nothing changes a record."""
        if self == PayloadPolicy() and not hooks:
            return None
        return PayloadTransform(self, sync_id, self.key(), hooks)


class Key:
    """An HMAC key that never shows itself."""

    __slots__ = ("_value",)

    def __init__(self, value: bytes) -> None:
        self._value = value

    def __repr__(self) -> str:
        return "Key(<hidden>)"

    def digest(self, text: str) -> str:
        """HMAC-SHA256 of `text` (UTF-8), as 64 hex digits."""
        return hmac.new(self._value, text.encode(), hashlib.sha256).hexdigest()


HookCall = tuple[Callable[..., Any], tuple[str, ...]]
"""A `synclog_transform_payload` implementation and the argument names it takes."""


@dataclass(frozen=True)
class PayloadTransform:
    """A policy ready for the executors: its key read, the plugins' hook implementations gathered."""

    policy: PayloadPolicy
    sync_id: int
    key: Key | None
    hooks: tuple[HookCall, ...]

    def apply(self, frame: DataFrame) -> DataFrame:
        """`frame` with its identifier, payload and message columns rewritten, on the executors."""

        def rewrite(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
            for batch in batches:
                yield self.batch(batch)

        return frame.mapInArrow(rewrite, frame.schema)

    def batch(self, batch: pa.RecordBatch) -> pa.RecordBatch:
        """One Arrow batch of the canonical frame, rewritten column by column."""
        rules: dict[str, Callable[[str], str | None]] = {}
        if self.policy.patterns:
            rules["status_message"] = self._message
        if self.policy.mask_identifier is not None:
            rules["record_identifier"] = self._hmac
        if self.hooks or self.policy.log_fields is not None or self.policy.mask:
            rules |= dict.fromkeys(PAYLOAD_COLUMNS, self.payload)
        arrays = [
            _mapped(batch.column(i), rules[name]) if name in rules else batch.column(i)
            for i, name in enumerate(batch.schema.names)
        ]
        return pa.RecordBatch.from_arrays(arrays, schema=batch.schema)

    def payload(self, text: str) -> str | None:
        """A payload's JSON text under the policy; NULL when it is not JSON, or when only some
        fields are logged and it is not an object (it has no fields to keep)."""
        try:
            value = json.loads(text)
        except ValueError:
            return None  # the write refuses the record anyway; its text goes nowhere
        if not isinstance(value, dict):
            return None if self.policy.log_fields is not None else text
        for function, argnames in self.hooks:
            given = {"payload": value, "sync_id": self.sync_id}
            function(*[given[name] for name in argnames])
        if self.policy.log_fields is not None:
            value = {name: v for name, v in value.items() if name in self.policy.log_fields}
        for name, how in self.policy.mask.items():
            if value.get(name) is not None:
                value[name] = REDACTED if how is Mask.REDACT else self._hmac(_text(value[name]))
        return json.dumps(value, ensure_ascii=False, separators=(",", ":"))

    def _hmac(self, text: str) -> str:
        assert self.key is not None
        return self.key.digest(text)

    def _message(self, text: str) -> str | None:
        return self.policy.redact_message(text)


def _mapped(column: pa.Array, rule: Callable[[str], str | None]) -> pa.Array:
    return pa.array([None if v is None else rule(v) for v in column.to_pylist()], type=column.type)


def _text(value: Any) -> str:
    """What an HMAC digests: a string as it is, anything else as compact JSON with sorted keys."""
    if isinstance(value, str):
        return value
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"), sort_keys=True)
