"""What the PostgreSQL target can do."""

from __future__ import annotations

from synclog.plugin_api import Capabilities, Casefold, Staging

CAPABILITIES = Capabilities(
    json_type="JSONB",
    casefold=Casefold.LOWER,
    max_identifier_length=63,
    transactions=True,
    merge=False,
    partition_drop=True,
    staging=Staging.TASKS,
    max_json_bytes=16 * 1024 * 1024,
)
"""jsonb holds up to 255 MiB, but a row that size exhausts a Spark task's memory long before
(a 64 MiB payload already does with 2 GB): payload text above 16 MiB is truncated with a marker."""
