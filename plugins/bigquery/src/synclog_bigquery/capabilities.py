"""What the BigQuery target can do."""

from __future__ import annotations

from synclog.plugin_api import Capabilities, Casefold, Staging

CAPABILITIES = Capabilities(
    json_type="JSON",
    casefold=Casefold.LOWER,
    identifier_quote="`",
    max_identifier_length=300,
    transactions=True,
    transactional_ddl=False,
    merge=True,
    partition_expiry=True,
    staging=Staging.FILES,
)
