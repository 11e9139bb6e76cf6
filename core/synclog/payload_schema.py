"""The record payload schema: each top-level payload field and its JSON type, computed on executors."""

from __future__ import annotations

from collections.abc import Iterable

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F

JSON_TYPES = ("string", "number", "boolean", "array", "object", "null")
SEPARATOR = "\x1f"
"""Between a field's name and its type in a `field_types` pair."""

FieldType = str | list[str]
"""One JSON type, or the sorted types of a field whose records disagree (e.g. ["number", "string"])."""


def json_type(variant_type: Column) -> Column:
    """The JSON type of a Spark variant type name (`schema_of_variant`'s answer)."""
    return (
        F.when(variant_type.startswith("OBJECT"), F.lit("object"))
        .when(variant_type.startswith("ARRAY"), F.lit("array"))
        .when(variant_type == "STRING", F.lit("string"))
        .when(variant_type == "BOOLEAN", F.lit("boolean"))
        .when(variant_type == "VOID", F.lit("null"))
        .otherwise(F.lit("number"))  # BIGINT, INT, DECIMAL(p,s), DOUBLE: what parse_json makes of numbers
    )


def field_types(column: Column) -> Column:
    """`field<SEP>type` for each top-level field of the JSON object `column` (JSON text): an
    array, empty for a payload that is no object. Computed row by row, inside any Spark pass."""
    fields = F.try_parse_json(column).try_cast("map<string, variant>")

    def pair(entry: Column) -> Column:
        return F.concat(entry["key"], F.lit(SEPARATOR), json_type(F.schema_of_variant(entry["value"])))

    return F.transform(F.coalesce(F.map_entries(fields), F.array()), pair)


def schema_of(pairs: Iterable[str]) -> dict[str, FieldType]:
    """Field → JSON type from `field_types` pairs (of any number of records).

    A field that is NULL in some records and typed in others gets its type; a field only ever
    NULL is "null"; a field whose records hold different types gets the sorted list of them.
    """
    found: dict[str, set[str]] = {}
    for pair in pairs:
        name, _, type_ = pair.rpartition(SEPARATOR)
        found.setdefault(name, set()).add(type_)
    return {name: _merge(types) for name, types in sorted(found.items())}


def payload_schema(records: DataFrame, column: str = "record_payload") -> dict[str, FieldType]:
    """Field → JSON type over every payload object in `records` (see `schema_of`), in a Spark
    job of its own: only one row per distinct (field, type) reaches the driver."""
    pairs = records.select(F.explode(field_types(F.col(column))).alias("pair")).distinct()
    return schema_of(row["pair"] for row in pairs.collect())


def _merge(types: set[str]) -> FieldType:
    known = sorted(types - {"null"}) or ["null"]
    return known[0] if len(known) == 1 else known
