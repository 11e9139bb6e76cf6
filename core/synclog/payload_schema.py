"""The record payload schema: each top-level payload field and its JSON type, computed on executors."""

from __future__ import annotations

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F

JSON_TYPES = ("string", "number", "boolean", "array", "object", "null")

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


def payload_schema(records: DataFrame, column: str = "record_payload") -> dict[str, FieldType]:
    """Field → JSON type over every payload object in `records` (JSON text).

    Spark parses and explodes the payloads on the executors; only one row per distinct
    (field, type) reaches the driver. A field that is NULL in some records and typed in
    others gets its type; a field only ever NULL is "null"; a field whose records hold
    different types gets the sorted list of them. Payloads that are not objects add nothing.
    """
    fields = F.try_parse_json(F.col(column)).try_cast("map<string, variant>")
    pairs = records.select(F.explode(fields).alias("field", "value"))
    typed = pairs.select("field", json_type(F.schema_of_variant("value")).alias("type")).distinct()
    found: dict[str, set[str]] = {}
    for row in typed.collect():
        found.setdefault(row["field"], set()).add(row["type"])
    return {name: _merge(types) for name, types in sorted(found.items())}


def _merge(types: set[str]) -> FieldType:
    known = sorted(types - {"null"}) or ["null"]
    return known[0] if len(known) == 1 else known
