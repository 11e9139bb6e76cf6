"""What a target can and cannot do, declared as data so the core adapts without naming targets."""

from __future__ import annotations

from dataclasses import dataclass, fields
from enum import StrEnum


class Casefold(StrEnum):
    """How a warehouse folds unquoted identifiers."""

    LOWER = "lower"
    UPPER = "upper"
    NONE = "none"

    def apply(self, name: str) -> str:
        """Fold `name` the way the warehouse folds an unquoted identifier."""
        if self is Casefold.LOWER:
            return name.lower()
        if self is Casefold.UPPER:
            return name.upper()
        return name


@dataclass(frozen=True)
class Capabilities:
    """A target's abilities and limits; every field is read by the core or the docs matrix."""

    json_type: str
    """Physical column type that holds JSON payloads (JSON, JSONB, VARIANT, SUPER, STRING)."""
    casefold: Casefold = Casefold.LOWER
    max_identifier_length: int = 63
    three_part_names: bool = False
    """Whether relations are named database.schema.table (Snowflake, Databricks)."""
    transactions: bool = True
    merge: bool = False
    views: bool = True
    partition_expiry: bool = False
    """Whether old partitions expire by themselves (BigQuery's partition_expiration_days)."""
    partition_drop: bool = False
    """Whether retention can drop whole day partitions instead of deleting rows."""
    staging_formats: tuple[str, ...] = ("parquet",)
    max_json_bytes: int | None = None
    """Largest payload a JSON value may hold; larger payloads are truncated with a marker."""
    run_metadata_columns: bool = True
    """Whether the source/destination id columns and the metadata tables are written."""
    fields_column: bool = True
    """Whether the hightouch layout's `fields` column is written."""
    embedded: bool = False
    """Whether the target is a local file that needs no server (the demo's default)."""
    layouts: tuple[str, ...] = ("census", "hightouch")
    """The layouts the target can hold; the first is written when the config names none."""

    def as_rows(self) -> list[tuple[str, str]]:
        """(name, value) pairs, for `synclog plugins` and the generated docs matrix."""
        return [(f.name, _show(getattr(self, f.name))) for f in fields(self)]


def _show(value: object) -> str:
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, tuple):
        return ", ".join(map(str, value))
    if value is None:
        return "-"
    return str(value)
