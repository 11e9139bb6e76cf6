"""The keys `synclog.toml` accepts, table by table, and what each means.

`synclog.config` refuses any key not listed here, and the configuration reference of the docs
site is generated from these tables (`synclog.docs_gen`), so the two cannot drift apart.
"""

from __future__ import annotations

from dataclasses import dataclass

from synclog.notices.lineage import FACET_SCHEMA_PATH
from synclog.project import DOCS_URL, SOURCE_URL


@dataclass(frozen=True)
class Key:
    """One key of a `synclog.toml` table."""

    name: str
    value: str
    """What the value is (its TOML type and allowed values)."""
    meaning: str
    default: str = ""


_POLICY = (
    Key("log_fields", "list of strings", "Only these top-level payload fields are logged.", "every field"),
    Key(
        "mask",
        'table: field = "hmac" or "redact"',
        "Fields logged as a keyed digest or `[redacted]`; a sync's entries add to the defaults'.",
        "none",
    ),
    Key("mask_key_env", "string", "The environment variable holding the HMAC key (16 bytes at least)."),
    Key(
        "redact_messages",
        "list of regexes",
        "Matches in status messages and run errors become `[redacted]`.",
        "none",
    ),
    Key("mask_identifier", '"hmac"', "Log record identifiers as keyed digests too.", "not masked"),
)

_SYNC = (
    Key(
        "layouts",
        "list of strings",
        "The layouts to write (census, hightouch, lake).",
        "the target's first layout",
    ),
    Key(
        "retention_days",
        "whole number",
        "Days rows are kept, counted from each batch's `batch_started_at`.",
        "7",
    ),
    Key(
        "tables",
        "table: name = { … }",
        "Per-table switches (`[…tables.NAME]` below); a sync's entries add to the defaults'.",
    ),
    Key("alerts", "table", "Alert rules (`[….alerts]` below); a key replaces the defaults'."),
    Key(
        "error_code_pattern",
        "string (a regular expression with a group)",
        "Where a record's error code is read from its message when the engine gives none: the "
        "group's match at the message's start.",
        "`^\\s*([A-Za-z0-9_.\\-]+(?: [A-Za-z0-9_.\\-]+){0,5})\\s*:`, the words before the first colon",
    ),
    *_POLICY,
)

SECTIONS: dict[str, tuple[Key, ...]] = {
    "": (
        Key(
            "storage",
            "string, or a table (`[storage]`)",
            "Where the run store, the outage spool, "
            "load staging and read-backs live; every Spark process must reach it.",
            '".synclog"',
        ),
        Key(
            "keep_on_target_failure",
            "true or false",
            "Keep batches for `synclog flush` when the target fails, instead of failing the write.",
            "true",
        ),
        Key("targets", "table", "Named targets (`[targets.NAME]`); `--target NAME` picks one."),
        Key("defaults", "table", "Settings of every sync (`[defaults]`)."),
        Key("syncs", "table", "Settings of one sync (`[syncs.ID]`), replacing the defaults' key by key."),
        Key("notices", "table", "Where alerts and OpenLineage events go (`[notices]`)."),
    ),
    "storage": (
        Key("url", "string", "A folder, `s3://bucket/prefix`, `gs://bucket/prefix` or `/Volumes/…`."),
        Key("shared", "true or false", "The folder is mounted on every node (e.g. NFS).", "false"),
        Key("endpoint_url", "string", "An S3-compatible store's endpoint."),
        Key("region", "string", "The S3 region."),
    ),
    "targets.NAME": (
        Key("url", "string", "The target's URL (its page on this site lists the schemes)."),
        Key("password_env", "string", "The environment variable holding the password or token."),
        Key("database", "string", "The database of three-part names (Snowflake, Databricks)."),
        Key("schemas", "table: layout = schema", "A schema per layout instead of its default name."),
        Key(
            "options",
            "table",
            "Plugin options (the warehouse's page lists them); the URL's `?name=value` wins.",
        ),
    ),
    "defaults": _SYNC,
    "syncs.ID": _SYNC,
    "tables.NAME": (
        Key("enabled", "true or false", "Whether the table is written.", "true"),
        Key("retention_days", "whole number", "The table's own retention.", "the sync's"),
    ),
    "alerts": (
        Key("failed_run", "true or false", "Fire when a run failed or was aborted.", "false"),
        Key("rejection_rate", "number, or false", "Fire when a run's rejected share is above it.", "off"),
        Key("invalid_records", "whole number, or false", "Fire when a run has more invalid records.", "off"),
        Key(
            "volume_change",
            "number, or false",
            "Fire when a run's records are off the median of "
            "the last `volume_runs` runs by more than this fraction.",
            "off",
        ),
        Key("volume_runs", "whole number", "How many earlier runs the volume median is taken over.", "5"),
        Key(
            "freshness_hours",
            "number, or false",
            "Fire in `synclog check` when the last finished run ended longer ago.",
            "off",
        ),
    ),
    "notices": (
        Key("webhook", "table", "A JSON POST per notice (`[notices.webhook]`)."),
        Key("slack", "table", "A Slack incoming webhook (`[notices.slack]`)."),
        Key("openlineage", "table", "OpenLineage run events (`[notices.openlineage]`)."),
        Key("timeout_seconds", "number", "Each delivery try's time limit.", "5"),
        Key("retries", "whole number", "More tries after a failed delivery.", "2"),
    ),
    "notices.webhook": (
        Key("url", "string", "http(s) URL (or `url_env`: the variable holding it)."),
        Key("url_env", "string", "The environment variable holding the URL."),
        Key("secret_env", "string", "The variable whose value signs each body (`X-Synclog-Signature`)."),
    ),
    "notices.slack": (
        Key("url", "string", "The incoming webhook's URL (or `url_env`)."),
        Key("url_env", "string", "The environment variable holding the URL (it is a secret)."),
    ),
    "notices.openlineage": (
        Key("namespace", "string", "The job namespace.", '"synclog"'),
        Key(
            "producer",
            "http(s) URL",
            "Every event's and facet's `producer`.",
            f"this release's source, `{SOURCE_URL}/tree/v<version>`",
        ),
        Key(
            "schema_url",
            "http(s) URL",
            "The `synclog_run` facet's `_schemaURL`.",
            f"the schema on the docs site, `{DOCS_URL}{FACET_SCHEMA_PATH}`",
        ),
    ),
}
"""Every table of `synclog.toml` and its keys: NAME and ID stand for any name or sync id; `tables.NAME`
and `alerts` are tables inside `[defaults]` and `[syncs.ID]`."""


def names(section: str) -> set[str]:
    """The keys `section` accepts."""
    return {key.name for key in SECTIONS[section]}
