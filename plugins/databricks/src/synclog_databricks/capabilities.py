"""What the Databricks targets can do, as data."""

from __future__ import annotations

from dataclasses import replace

from synclog.plugin_api import Capabilities, Casefold, Staging

MAX_JSON_BYTES = 16 * 1024 * 1024
"""VARIANT values hold at most 16 MiB on current runtimes (128 MiB on some); STRING payloads get the
same limit, since a larger row exhausts a Spark task's memory long before."""

DELTA = Capabilities(
    json_type="STRING",
    casefold=Casefold.LOWER,
    identifier_quote="`",
    max_identifier_length=255,
    three_part_names=True,
    transactions=False,
    transactional_ddl=False,
    merge=True,
    staging=Staging.EXECUTORS,
    max_json_bytes=MAX_JSON_BYTES,
)
"""Inside a cluster whose session has Delta: the executors fill a Delta stage, one MERGE swaps."""

PARQUET = replace(DELTA, merge=False, partition_replace=True)
"""Inside a session without Delta: partitioned Parquet tables, replaced partition by partition."""

WAREHOUSE = replace(DELTA, staging=Staging.FILES, replays_statements=True)
"""Through a SQL warehouse: COPY INTO a stage from the staged Parquet files in storage, one MERGE.
The connector replays a statement when a dropped connection lost its answer (a fault trial's
cut lost a load's row to it): the core counts each stage rather than trust the COPY's answer."""
