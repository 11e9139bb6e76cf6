"""The record-results contract: which columns a batch of results has, and what values they take."""

from __future__ import annotations

from dataclasses import dataclass

import pyarrow as pa
from pyspark.sql import Column
from pyspark.sql import functions as F
from pyspark.sql import types as T
from pyspark.sql.pandas.types import to_arrow_schema

from synclog.errors import InputError
from synclog.model import InputStatus, Operation
from synclog.payloads import LARGEST_JSON_BYTES

_INTEGRAL = (T.ByteType, T.ShortType, T.IntegerType, T.LongType)
_TIMESTAMP = (T.TimestampType, T.TimestampNTZType)
_JSONISH = (T.StringType, T.StructType, T.MapType)


@dataclass(frozen=True)
class InputColumn:
    """A column of the record results and the Spark types it may have."""

    name: str
    accepts: tuple[type[T.DataType], ...]
    expected: str
    required: bool = True


INPUT_COLUMNS: tuple[InputColumn, ...] = (
    InputColumn("record_identifier", (T.StringType, *_INTEGRAL), "string or integer"),
    InputColumn("operation", (T.StringType,), "string"),
    InputColumn("status", (T.StringType,), "string"),
    InputColumn("status_message", (T.StringType,), "string"),
    InputColumn("record_payload", _JSONISH, "JSON string, struct or map"),
    InputColumn("batch_number", _INTEGRAL, "integer"),
    InputColumn("batch_started_at", _TIMESTAMP, "timestamp"),
    InputColumn("batch_completed_at", _TIMESTAMP, "timestamp"),
    InputColumn("split_group", (T.StringType,), "string", required=False),
    InputColumn("fields", _JSONISH, "JSON string, struct or map", required=False),
    InputColumn("error_code", (T.StringType,), "string", required=False),
)

INPUT_SCHEMA = T.StructType(
    [
        T.StructField("record_identifier", T.StringType()),
        T.StructField("operation", T.StringType()),
        T.StructField("status", T.StringType()),
        T.StructField("status_message", T.StringType()),
        T.StructField("record_payload", T.StringType()),
        T.StructField("batch_number", T.LongType()),
        T.StructField("batch_started_at", T.TimestampType()),
        T.StructField("batch_completed_at", T.TimestampType()),
        T.StructField("split_group", T.StringType()),
        T.StructField("fields", T.StringType()),
        T.StructField("error_code", T.StringType()),
    ]
)
"""The record results' schema, as Spark types (what JSON lines files are read with).

Every column but `split_group`, `fields` and `error_code` (the destination's code of a
rejection; read from `status_message` when absent, see `synclog.error_codes`) is required;
`INPUT_COLUMNS` lists the other types each column may have (an integer `record_identifier`, a
struct or map payload, `TIMESTAMP_NTZ`). Timestamps without a time zone are taken to be UTC.
"""

INPUT_ARROW_SCHEMA: pa.Schema = to_arrow_schema(INPUT_SCHEMA, timezone="UTC")
"""`INPUT_SCHEMA` as Arrow types (timestamps in microseconds, UTC), for engines that build Arrow."""

VIOLATION = "_synclog_violation"
"""Column naming the first rule a row breaks: `column<US>=value` (`column<US>` for NULL)."""
_SEPARATOR = "\x1f"
_HIDDEN = "\x00hidden"
"""Stands for a payload a violation does not show (a payload policy applies)."""


def check_columns(schema: T.StructType) -> None:
    """Fail on a missing column or a column of the wrong type, naming it (record results of `schema`)."""
    present = {f.name: f.dataType for f in schema.fields}
    for column in INPUT_COLUMNS:
        dtype = present.get(column.name)
        if dtype is None:
            if column.required:
                raise InputError(f"record results: missing column {column.name!r}")
            continue
        if not isinstance(dtype, column.accepts):
            raise InputError(
                f"record results: column {column.name!r} is {dtype.simpleString()}, "
                f"expected {column.expected}"
            )


def violation(schema: T.StructType, *, show_payloads: bool = True) -> Column:
    """An expression naming the first value rule a row breaks (see `VIOLATION`) in record results
    of `schema`.

    Without `show_payloads`, invalid JSON is named but not quoted (it may hold what a policy masks).
    """
    rules: list[tuple[str, Column, Column]] = [
        ("operation", ~_is_in("operation", Operation), F.col("operation")),
        ("status", ~_is_in("status", InputStatus), F.col("status")),
        ("batch_number", F.col("batch_number").isNull(), F.lit(None)),
        ("batch_started_at", F.col("batch_started_at").isNull(), F.lit(None)),
    ]
    for name in ("record_payload", "fields"):
        if name in schema.fieldNames() and isinstance(schema[name].dataType, T.StringType):
            checked = F.octet_length(F.col(name)) <= LARGEST_JSON_BYTES  # larger ones are truncated
            bad_json = F.col(name).isNotNull() & checked & F.try_parse_json(F.col(name)).isNull()
            rules.append((name, bad_json, F.col(name) if show_payloads else F.lit(_HIDDEN)))
    expr = F.lit(None).cast("string")
    for name, broken, value in reversed(rules):
        shown = F.coalesce(F.concat(F.lit("="), F.substring(value.cast("string"), 1, 200)), F.lit(""))
        expr = F.when(broken, F.concat(F.lit(name + _SEPARATOR), shown)).otherwise(expr)
    return expr


def violation_error(found: str) -> InputError:
    """The one-line InputError the user sees for a `VIOLATION` value."""
    name, _, shown = found.partition(_SEPARATOR)
    if not shown:
        return InputError(f"record results: column {name!r} must not be NULL")
    value = shown[1:]
    allowed = {
        "operation": ", ".join(o.value for o in Operation),
        "status": ", ".join(s.value for s in InputStatus),
    }
    if value == _HIDDEN:
        return InputError(
            f"record results: column {name!r} holds invalid JSON (not shown: a payload policy applies)"
        )
    if name in allowed:
        return InputError(
            f"record results: column {name!r} has unknown value {value!r} (expected one of {allowed[name]})"
        )
    return InputError(f"record results: column {name!r} holds invalid JSON, first: {value!r}")


def _is_in(name: str, vocabulary: type[Operation] | type[InputStatus]) -> Column:
    return F.coalesce(F.col(name).isin([v.value for v in vocabulary]), F.lit(False))
