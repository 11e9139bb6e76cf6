"""What the Snowflake target can do, as data."""

from __future__ import annotations

from synclog.plugin_api import Capabilities, Casefold, Staging

MAX_VARIANT_BYTES = 16 * 1024 * 1024
"""Snowflake's limit for one VARIANT value (16 MB)."""

ROW_HEADROOM_BYTES = 1024 * 1024
"""COPY reads each Parquet row as one VARIANT ($1), so a payload leaves room for the row's other columns."""

CAPABILITIES = Capabilities(
    json_type="VARIANT",
    casefold=Casefold.UPPER,
    max_identifier_length=255,
    three_part_names=True,
    transactions=True,
    transactional_ddl=False,
    merge=True,
    replays_statements=True,  # the connector retries a query request whose answer a dropped connection lost
    staging=Staging.FILES,
    max_json_bytes=MAX_VARIANT_BYTES - ROW_HEADROOM_BYTES,
)
