"""Make jsonb results look like Redshift SUPER results to redshift_connector.

Redshift sends SUPER columns with type OID 4000, which redshift_connector reads as text and returns as
a ``str`` holding compact JSON (``{"a":1}``, a string as ``"x"``). Postgres sends jsonb (OID 3802)
with spaces after ``:`` and ``,``. So in every RowDescription jsonb/json columns are relabelled 4000,
and in DataRows their text values are compacted (whitespace outside JSON strings removed).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import replace

from .pg_wire import Field, Message, data_row, decode_data_row, decode_row_description, row_description

__all__ = ["SUPER_OID", "compact_json", "compact_row", "json_columns", "super_row_description"]

SUPER_OID = 4000
_JSON_OIDS = frozenset({3802, 114})
_TOKEN = re.compile(r'"(?:[^"\\]|\\.)*"|\s+')


def compact_json(text: str) -> str:
    """`text` (valid JSON) without whitespace outside strings."""
    return _TOKEN.sub(lambda m: m.group(0) if m.group(0)[0] == '"' else "", text)


def super_row_description(body: bytes) -> tuple[Message, list[Field]]:
    """A RowDescription with json/jsonb columns relabelled SUPER, and the original fields."""
    fields = decode_row_description(body)
    if not any(f.type_oid in _JSON_OIDS for f in fields):
        return Message(b"T", body), fields
    relabelled = [replace(f, type_oid=SUPER_OID) if f.type_oid in _JSON_OIDS else f for f in fields]
    return row_description(relabelled), fields


def json_columns(fields: Sequence[Field] | None) -> list[int]:
    """Indexes of the text-format json/jsonb columns among `fields`."""
    return [i for i, f in enumerate(fields or ()) if f.type_oid in _JSON_OIDS and f.format == 0]


def compact_row(message: Message, columns: Sequence[int]) -> Message:
    if not columns:
        return message
    values = decode_data_row(message.body)
    for i in columns:
        value = values[i] if i < len(values) else None
        if value is not None:
            values[i] = compact_json(value.decode()).encode()
    return data_row(values)
