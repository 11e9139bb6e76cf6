"""Settings both Databricks targets read: the catalog and how JSON is stored."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace

from synclog.plugin_api import Capabilities, ConfigError, TargetSettings, TargetURL, check_name

DEFAULT_CATALOG = "census"
JSON_TYPES = {"string": "STRING", "variant": "VARIANT"}
"""`json` option → the column type of JSON payloads (VARIANT needs Databricks Runtime 15.3+ or Spark 4)."""


def catalog(url: TargetURL, settings: TargetSettings, named: str | None) -> str:
    """The Unity Catalog catalog: the one the URL `named`, else `database` in the settings, else census."""
    if named and settings.database and named.lower() != settings.database.lower():
        raise ConfigError(f"{url}: the URL names catalog {named}, the settings {settings.database}")
    return check_name((named or settings.database or DEFAULT_CATALOG).lower(), what="catalog", max_length=255)


def with_json_type(capabilities: Capabilities, url: TargetURL, given: Mapping[str, str]) -> Capabilities:
    """`capabilities` with the type of JSON columns: STRING unless the `json` option asks for VARIANT."""
    choice = given.get("json", "string").lower()
    if choice not in JSON_TYPES:
        raise ConfigError(f"{url}: json must be one of {', '.join(JSON_TYPES)}, not {choice!r}")
    return replace(capabilities, json_type=JSON_TYPES[choice])
