"""What the Redshift target can do."""

from __future__ import annotations

from synclog.plugin_api import Capabilities, Casefold, FileFormat, Staging

MAX_ROW_BYTES = 4 * 1024 * 1024
"""COPY reads no JSON object, and no input row of any format, above 4 MB (AWS: copy_json,
copy-parameters-data-source)."""
ROW_HEADROOM = 512 * 1024
"""What a staged row keeps for its other columns beside one payload at the limit."""

CAPABILITIES = Capabilities(
    json_type="SUPER",
    casefold=Casefold.LOWER,
    max_identifier_length=127,
    transactions=True,
    merge=False,
    staging=Staging.FILES,
    staging_format=FileFormat.JSON_LINES,
    max_json_bytes=MAX_ROW_BYTES - ROW_HEADROOM,
)
"""SUPER holds 16 MB per value, but the bulk path that parses JSON of any shape into SUPER (COPY
FORMAT JSON 'auto') takes objects of 4 MB at most: payload text above 3.5 MiB is truncated with a
marker, leaving the rest of the row room."""
