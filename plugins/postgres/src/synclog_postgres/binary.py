"""Arrow record batches as rows of PostgreSQL's binary COPY format, built by Arrow's kernels.

A row is its int16 field count, then per field a big-endian int32 length and the value's
binary form (length -1 and nothing for NULL). Fixed-width values are laid out with numpy,
variable-width ones get their length prefix, and one element-wise join per batch lays the
rows out contiguously: no Python object is made per value, and the server parses no text
except the JSON (which jsonb's binary input, a version byte and the text, still parses).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from synclog.plugin_api import ColumnType

SIGNATURE = b"PGCOPY\n\xff\r\n\x00" + bytes(8)
"""The stream's header: the signature, then int32 flags and header-extension length (both 0)."""
TRAILER = b"\xff\xff"

_PG_EPOCH_US = 946_684_800_000_000
"""2000-01-01 in microseconds since 1970: PostgreSQL counts timestamps from there."""
_NULL = pa.scalar(b"\xff\xff\xff\xff", pa.large_binary())
_JSONB_VERSION = pa.scalar(b"\x01", pa.large_binary())
_NOTHING = pa.scalar(b"", pa.large_binary())
_FIXED: dict[ColumnType, tuple[pa.DataType, str]] = {
    ColumnType.BIGINT: (pa.int64(), ">i8"),
    ColumnType.INTEGER: (pa.int32(), ">i4"),
    ColumnType.TIMESTAMP: (pa.int64(), ">i8"),
    ColumnType.BOOLEAN: (pa.uint8(), "u1"),
}


def encode(batch: pa.RecordBatch, types: Sequence[ColumnType]) -> pa.Buffer:
    """The binary COPY rows of `batch`, whose columns hold `types` in order."""
    count = pa.scalar(len(types).to_bytes(2, "big"), pa.large_binary())
    fields = [_field(batch.column(i), type_) for i, type_ in enumerate(types)]
    rows = pc.binary_join_element_wise(count, *fields, _NOTHING)
    offsets = np.frombuffer(rows.buffers()[1], np.int64)[rows.offset : rows.offset + len(rows) + 1]
    return rows.buffers()[2][int(offsets[0]) : int(offsets[-1])]


def _field(column: pa.Array, type_: ColumnType) -> pa.Array:
    encoded = _fixed(column, type_) if type_ in _FIXED else _variable(column, type_)
    return pc.if_else(column.is_null(), _NULL, encoded) if column.null_count else encoded


def _fixed(column: pa.Array, type_: ColumnType) -> pa.Array:
    arrow_type, dtype = _FIXED[type_]
    if type_ is ColumnType.TIMESTAMP:
        zone = getattr(column.type, "tz", None)
        column = column.cast(pa.timestamp("us", tz=zone))
    values = pc.fill_null(column.cast(arrow_type), 0).to_numpy(zero_copy_only=False)
    if type_ is ColumnType.TIMESTAMP:
        values = values - _PG_EPOCH_US
    width, count = np.dtype(dtype).itemsize, len(values)
    laid_out = np.empty(count, dtype=[("length", ">i4"), ("value", dtype)])
    laid_out["length"] = width
    laid_out["value"] = values
    fixed = pa.FixedSizeBinaryArray.from_buffers(pa.binary(4 + width), count, [None, pa.py_buffer(laid_out)])
    return fixed.cast(pa.large_binary())


def _variable(column: pa.Array, type_: ColumnType) -> pa.Array:
    data = column.cast(pa.large_binary())
    if type_ is ColumnType.JSON:
        data = pc.binary_join_element_wise(_JSONB_VERSION, data, _NOTHING)
    lengths = pc.fill_null(pc.binary_length(data), 0).to_numpy(zero_copy_only=False).astype(">i4")
    prefix = pa.FixedSizeBinaryArray.from_buffers(pa.binary(4), len(lengths), [None, pa.py_buffer(lengths)])
    return pc.binary_join_element_wise(prefix.cast(pa.large_binary()), data, _NOTHING)
