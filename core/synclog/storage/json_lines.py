"""Record batches as JSON lines, built by Arrow's kernels (no Python object per value).

One object per row and one key per non-NULL column (a NULL leaves its key out). A column of
Arrow's JSON extension type holds JSON text and is embedded as a JSON value, so that a loader
parses it into its semi-structured type (its text `null` is written as `null`); line breaks in
that text, which valid JSON has only between tokens, become spaces, keeping one object per line.
Strings are escaped, timestamps are ISO 8601 instants in UTC (`2026-03-01T08:00:00.123456Z`),
integers and booleans are JSON numbers and booleans.
"""

from __future__ import annotations

import json

import pyarrow as pa
import pyarrow.compute as pc

_TEXT = pa.large_string()
_JSON_EXTENSION = "arrow.json"
_ESCAPES = (("\\", "\\\\"), ('"', '\\"'), *((chr(code), f"\\u{code:04x}") for code in range(0x20)))
_NEEDS_ESCAPE = r'[\x00-\x1f"\\]'


def _text(value: str) -> pa.Scalar:
    """A string scalar (made when used: pyarrow's first scalar imports pandas, a tenth of a second)."""
    return pa.scalar(value, _TEXT)


def encode(batch: pa.RecordBatch) -> pa.Buffer:
    """The JSON lines of `batch`, each ending with a newline."""
    if batch.num_rows == 0:
        return pa.py_buffer(b"")
    members = [_member(field, column) for field, column in zip(batch.schema, batch.columns, strict=True)]
    body = pc.binary_join_element_wise(*members, _text("")) if members else pa.nulls(batch.num_rows, _TEXT)
    # Every member starts with a comma: the object's body is the joined members minus the first one.
    inner = pc.utf8_slice_codeunits(pc.fill_null(body, _text("")), 1)
    lines = pc.binary_join_element_wise(_text("{"), inner, _text("}\n"), _text(""))
    _, offsets, data = lines.buffers()
    bounds = pa.Array.from_buffers(pa.int64(), len(lines) + 1, [None, offsets], offset=lines.offset)
    return data[bounds[0].as_py() : bounds[-1].as_py()]


def _member(field: pa.Field, column: pa.Array) -> pa.Array:
    """`,"name":value` per row, or an empty string where the column is NULL."""
    key = _text("," + json.dumps(field.name, ensure_ascii=False) + ":")
    return pc.fill_null(pc.binary_join_element_wise(key, _value(field, column), _text("")), _text(""))


def _value(field: pa.Field, column: pa.Array) -> pa.Array:
    """Each value's JSON text (NULL where the column is NULL)."""
    kind = field.type
    if getattr(kind, "extension_name", None) == _JSON_EXTENSION:
        text = column.storage.cast(_TEXT)
        return pc.replace_substring(pc.replace_substring(text, "\n", " "), "\r", " ")
    if pa.types.is_string(kind) or pa.types.is_large_string(kind):
        return _quoted(_escaped(column.cast(_TEXT)))
    if pa.types.is_integer(kind) or pa.types.is_boolean(kind) or pa.types.is_null(kind):
        return column.cast(_TEXT)
    if pa.types.is_timestamp(kind):
        instants = column.cast(pa.timestamp("us", tz="UTC"))
        return _quoted(pc.strftime(instants, format="%Y-%m-%dT%H:%M:%SZ").cast(_TEXT))
    raise TypeError(f"column {field.name!r} of type {kind} cannot be written as JSON")


def _escaped(text: pa.Array) -> pa.Array:
    """`text` with backslashes, quotes and control characters escaped as JSON strings need."""
    if not pc.any(pc.match_substring_regex(text, _NEEDS_ESCAPE)).as_py():
        return text
    for raw, escaped in _ESCAPES:
        text = pc.replace_substring(text, raw, escaped)
    return text


def _quoted(text: pa.Array) -> pa.Array:
    return pc.binary_join_element_wise(_text('"'), text, _text('"'), _text(""))
