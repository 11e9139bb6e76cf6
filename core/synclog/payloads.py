"""Payload size limits: an oversized JSON payload becomes a small marker object, never a failed load."""

from __future__ import annotations

from pyspark.sql import Column
from pyspark.sql import functions as F

TRUNCATED_MARKER = "_synclog_truncated"
LARGEST_JSON_BYTES = 16 * 1024 * 1024
"""The largest payload logged whole on any target: larger ones are truncated with the marker
before anything is stored (Spark's JSON parser cannot check strings of 20 million characters,
and no warehouse synclog writes to keeps a JSON value much larger)."""
MAX_HEAD_CHARS = 16_383
"""At up to 4 bytes a character, the marker's head stays within 65,535 bytes: the longest string
a JSON value holds in some warehouses (a string inside Redshift's SUPER)."""


def fit_json(column: Column, max_bytes: int | None) -> Column:
    """`column` (JSON text) unchanged when it fits in `max_bytes`, else a marker object.

    The marker keeps the original size, a SHA-256 of the original and its first characters,
    so the record stays identifiable: {"_synclog_truncated": true, "original_bytes": …}. The head
    is a sixteenth of `max_bytes`, at least 16 and at most `MAX_HEAD_CHARS` characters.
    """
    if max_bytes is None:
        return column
    head_chars = max(16, min(max_bytes // 16, MAX_HEAD_CHARS))
    marker = F.to_json(
        F.struct(
            F.lit(True).alias(TRUNCATED_MARKER),
            F.octet_length(column).alias("original_bytes"),
            F.sha2(column, 256).alias("sha256"),
            F.substring(column, 1, head_chars).alias("head"),
        )
    )
    return F.when(F.octet_length(column) > max_bytes, marker).otherwise(column)
