"""`synclog.toml`: named targets and per-sync settings (layouts, tables, retention, payload policy).

storage = "s3://bucket/synclog"          # run store, spool and load staging (default: .synclog)

[targets.default]
url = "postgresql://synclog@db.internal:5432/analytics"
password_env = "SYNCLOG_PG_PASSWORD"     # secrets come from the environment
schemas = { census = "census" }

[defaults]
layouts = ["census"]
retention_days = 7

[syncs.1234]
retention_days = 30
tables = { sync_log = { retention_days = 90 } }
log_fields = ["id", "plan", "email"]     # the payload policy (see synclog.privacy)
mask = { email = "hmac" }
mask_key_env = "SYNCLOG_MASK_KEY"
redact_messages = ['[\\w.+-]+@[\\w-]+\\.[\\w.]+']
alerts = { rejection_rate = 0.05, failed_run = true }   # see synclog.notices.rules
error_code_pattern = '^ERR-(\\d+)'      # the error code in a message (see synclog.error_codes)

[notices]                                # where alerts go, and OpenLineage events
webhook = { url = "https://hooks.example.com/synclog", secret_env = "SYNCLOG_WEBHOOK_SECRET" }
slack = { url_env = "SYNCLOG_SLACK_WEBHOOK" }
openlineage = { namespace = "synclog" }
"""

from __future__ import annotations

import os
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass, field, fields, replace
from pathlib import Path
from typing import Any

from synclog import config_keys as keys
from synclog.error_codes import DEFAULT_PATTERN, checked_pattern
from synclog.errors import ConfigError
from synclog.notices.delivery import Endpoint, NoticeSettings
from synclog.notices.lineage import LineageSettings
from synclog.notices.rules import AlertRules
from synclog.privacy import PayloadPolicy
from synclog.storage.location import Location
from synclog.targets.base import DEFAULT_STORAGE, TargetSettings, default_storage
from synclog.urls import TargetURL

DEFAULT_TARGET = "duckdb:///synclog.duckdb"
DEFAULT_RETENTION_DAYS = 7
"""Days a sync's records are kept when synclog.toml does not say (`retention_days`)."""
CONFIG_FILE = "synclog.toml"
_REPLACED = {
    "state_dir": "storage",
    "staging_dir": "storage",
}
"""Keys of earlier versions, and what replaced them."""


@dataclass(frozen=True)
class TableSettings:
    """Per-table switches: whether it is written, and its own retention."""

    enabled: bool = True
    retention_days: int | None = None


@dataclass(frozen=True)
class SyncSettings:
    """What is written for a sync, how long it is kept, and what of each record is logged."""

    layouts: tuple[str, ...] = ()
    """Layouts to write; empty means the target's default layout (its capabilities' first)."""
    retention_days: int = DEFAULT_RETENTION_DAYS
    tables: Mapping[str, TableSettings] = field(default_factory=dict)
    policy: PayloadPolicy = field(default_factory=PayloadPolicy)
    alerts: AlertRules = field(default_factory=AlertRules)
    error_code_pattern: str = DEFAULT_PATTERN
    """Where a rejected record's error code is read from its message (`synclog.error_codes`)."""

    def table(self, name: str) -> TableSettings:
        """Settings of the table `name` (its public name, e.g. `sync_log`)."""
        return self.tables.get(name, TableSettings())

    def retention_for(self, name: str) -> int:
        """Days rows of table `name` are kept for this sync."""
        days = self.table(name).retention_days
        return self.retention_days if days is None else days


@dataclass(frozen=True)
class TargetConfig:
    """A named target: its URL, where its password comes from, and its settings."""

    url: str
    password_env: str | None = None
    settings: TargetSettings = field(default_factory=TargetSettings)


@dataclass(frozen=True)
class Config:
    """Everything `synclog.toml` says, with defaults for what it leaves out."""

    targets: Mapping[str, TargetConfig] = field(default_factory=dict)
    defaults: SyncSettings = field(default_factory=SyncSettings)
    syncs: Mapping[int, SyncSettings] = field(default_factory=dict)
    storage: Location = field(default_factory=default_storage)
    """Where the run store, the spool and load staging live; every Spark process must reach it."""
    keep_on_target_failure: bool = True
    """Keep batches for `synclog flush` when the target fails, instead of failing the sync."""
    notices: NoticeSettings = field(default_factory=NoticeSettings)
    """Where alerts go (webhook, Slack) and OpenLineage events."""

    @classmethod
    def load(cls, path: str | Path | None = None) -> Config:
        """Read `path`, else `$SYNCLOG_CONFIG`, else `./synclog.toml` if present, else defaults."""
        explicit = path or os.environ.get("SYNCLOG_CONFIG")
        file = Path(explicit) if explicit else Path(CONFIG_FILE)
        if not file.exists():
            if explicit:
                raise ConfigError(f"config file {file} does not exist")
            return cls()
        try:
            data = tomllib.loads(file.read_text(encoding="utf-8"))
        except tomllib.TOMLDecodeError as exc:
            raise ConfigError(f"{file}: {exc}") from None
        return cls.from_dict(data, source=str(file))

    @classmethod
    def from_dict(cls, data: Mapping[str, Any], *, source: str = "config") -> Config:
        """Build a config from parsed TOML, naming the first unknown or malformed key."""
        _only(data, keys.names(""), source)
        defaults = _sync_settings(data.get("defaults", {}), SyncSettings(), f"{source}: defaults")
        syncs: dict[int, SyncSettings] = {}
        for key, value in dict(data.get("syncs", {})).items():
            try:
                sync_id = int(key)
            except ValueError:
                raise ConfigError(f"{source}: syncs.{key}: sync ids are integers") from None
            syncs[sync_id] = _sync_settings(value, defaults, f"{source}: syncs.{key}")
        targets = {
            name: _target(value, f"{source}: targets.{name}")
            for name, value in dict(data.get("targets", {})).items()
        }
        storage = _storage(data.get("storage", DEFAULT_STORAGE), f"{source}: storage")
        keep = data.get("keep_on_target_failure", True)
        if not isinstance(keep, bool):
            raise ConfigError(f"{source}: keep_on_target_failure must be true or false")
        notices = _notices(data.get("notices", {}), f"{source}: notices")
        return cls(targets, defaults, syncs, storage, keep, notices)

    def sync(self, sync_id: int) -> SyncSettings:
        """Settings of `sync_id` (the defaults where it has none)."""
        return self.syncs.get(sync_id, self.defaults)

    def resolve_target(self, name_or_url: str | None) -> tuple[TargetURL, TargetSettings]:
        """The URL and settings for a target name from `[targets]`, or a URL as given."""
        chosen = name_or_url or ("default" if "default" in self.targets else DEFAULT_TARGET)
        named = self.targets.get(chosen)
        if named is None:
            if "://" not in chosen:
                known = ", ".join(sorted(self.targets)) or "none configured"
                raise ConfigError(f"unknown target {chosen!r} (named targets: {known})")
            named = TargetConfig(url=chosen)
        settings = replace(named.settings, storage=self.storage)
        return TargetURL.parse(named.url, password_env=named.password_env), settings


def _only(data: Mapping[str, Any], allowed: set[str], where: str) -> None:
    if not isinstance(data, Mapping):
        raise ConfigError(f"{where}: expected a table")
    replaced = sorted(set(data) & set(_REPLACED))
    if replaced:
        raise ConfigError(
            f"{where}: {replaced[0]} was replaced by {_REPLACED[replaced[0]]} (one location for the run "
            'store, the spool and load staging that every Spark process reaches), e.g. storage = ".synclog"'
        )
    unknown = sorted(set(data) - allowed)
    if unknown:
        raise ConfigError(f"{where}: unknown key {unknown[0]!r} (known: {', '.join(sorted(allowed))})")


def _days(value: Any, where: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise ConfigError(f"{where}: retention_days must be a whole number of days, got {value!r}")
    return value


def _sync_settings(data: Any, base: SyncSettings, where: str) -> SyncSettings:
    _only(data, keys.names("defaults"), where)
    layouts = data.get("layouts", base.layouts)
    if not isinstance(layouts, list | tuple) or not all(isinstance(x, str) for x in layouts):
        raise ConfigError(f"{where}: layouts must be a list of names, got {layouts!r}")
    tables = dict(base.tables)
    for name, value in dict(data.get("tables", {})).items():
        _only(value, keys.names("tables.NAME"), f"{where}.tables.{name}")
        enabled = value.get("enabled", True)
        if not isinstance(enabled, bool):
            raise ConfigError(f"{where}.tables.{name}: enabled must be true or false")
        days = value.get("retention_days")
        tables[name] = TableSettings(enabled, None if days is None else _days(days, where))
    days = _days(data.get("retention_days", base.retention_days), where)
    alerts = _alerts(data.get("alerts", {}), base.alerts, f"{where}.alerts")
    pattern = checked_pattern(data.get("error_code_pattern", base.error_code_pattern), where)
    return SyncSettings(tuple(layouts), days, tables, _policy(data, base.policy, where), alerts, pattern)


def _policy(data: Mapping[str, Any], base: PayloadPolicy, where: str) -> PayloadPolicy:
    """The payload policy: each key replaces the base's, except `mask`, which adds to it."""
    log_fields = data.get("log_fields", base.log_fields)
    redact = data.get("redact_messages", base.redact_messages)
    for name, value in (("log_fields", log_fields), ("redact_messages", redact)):
        strings = isinstance(value, list | tuple) and all(isinstance(x, str) for x in value)
        if value is not None and not strings:
            raise ConfigError(f"{where}: {name} must be a list of strings, got {value!r}")
    mask = data.get("mask", {})
    if not isinstance(mask, Mapping):
        raise ConfigError(f'{where}: mask must be a table of field = "hmac" or "redact", got {mask!r}')
    key_env = data.get("mask_key_env", base.mask_key_env)
    if key_env is not None and not isinstance(key_env, str):
        raise ConfigError(f"{where}: mask_key_env must name an environment variable, got {key_env!r}")
    try:
        return PayloadPolicy(
            log_fields=log_fields,
            mask={**base.mask, **mask},
            mask_key_env=key_env,
            redact_messages=redact,
            mask_identifier=data.get("mask_identifier", base.mask_identifier),
        )
    except ConfigError as exc:
        raise ConfigError(f"{where}: {exc}") from None


def _storage(data: Any, where: str) -> Location:
    """`storage = "…"`, or a table: `{ url = "…", shared = true, endpoint_url = "…", region = "…" }`."""
    if isinstance(data, str):
        return Location.parse(data, what=where)
    _only(data, keys.names("storage"), where)
    if not isinstance(data.get("url"), str):
        raise ConfigError(f"{where}: url is required")
    if not isinstance(data.get("shared", False), bool):
        raise ConfigError(f"{where}: shared must be true or false")
    return Location.parse(data["url"], data, what=where)


def _target(data: Any, where: str) -> TargetConfig:
    _only(data, keys.names("targets.NAME"), where)
    if not isinstance(data.get("url"), str):
        raise ConfigError(f"{where}: url is required")
    settings = TargetSettings(
        database=data.get("database"),
        schemas=dict(data.get("schemas", {})),
        options=dict(data.get("options", {})),
    )
    return TargetConfig(data["url"], data.get("password_env"), settings)


def _number(value: Any, where: str, what: str, *, whole: bool = False) -> Any:
    kinds = (int,) if whole else (int, float)
    if isinstance(value, bool) or not isinstance(value, kinds) or value < 0:
        raise ConfigError(f"{where}: {what}, got {value!r}")
    return value


def _alerts(data: Any, base: AlertRules, where: str) -> AlertRules:
    """A sync's alert rules: each key replaces the base's (`[defaults]`), `false` turns one off."""
    names = {f.name for f in fields(AlertRules)}
    _only(data, keys.names("alerts"), where)
    values = {name: getattr(base, name) for name in names}
    for name, value in data.items():
        if value is False and name not in ("failed_run", "volume_runs"):
            values[name] = None
        elif name == "failed_run":
            if not isinstance(value, bool):
                raise ConfigError(f"{where}: failed_run must be true or false, got {value!r}")
            values[name] = value
        elif name in ("invalid_records", "volume_runs"):
            values[name] = _number(value, where, f"{name} must be a whole number", whole=True)
        else:
            values[name] = _number(value, where, f"{name} must be a number (false: off)")
    if values["volume_runs"] < 1:
        raise ConfigError(f"{where}: volume_runs must be 1 or more, got {values['volume_runs']!r}")
    return AlertRules(**values)


def _notices(data: Any, where: str) -> NoticeSettings:
    """`[notices]`: `webhook`, `slack`, `openlineage`, `timeout_seconds`, `retries`."""
    _only(data, keys.names("notices"), where)
    endpoints = []
    for kind in ("webhook", "slack"):
        if kind not in data:
            continue
        part = data[kind]
        allowed = keys.names(f"notices.{kind}")
        _only(part, allowed, f"{where}.{kind}")
        if sum(key in part for key in ("url", "url_env")) != 1:
            raise ConfigError(f"{where}.{kind}: give url or url_env (the variable holding the URL)")
        for key in allowed & set(part):
            if not isinstance(part[key], str) or not part[key]:
                raise ConfigError(f"{where}.{kind}: {key} must be a string")
        url = part.get("url")
        if url is not None and not url.startswith(("http://", "https://")):
            raise ConfigError(f"{where}.{kind}: url must start with http:// or https://")
        endpoints.append(Endpoint(kind, url, part.get("url_env"), part.get("secret_env")))
    lineage = _lineage(data["openlineage"], f"{where}.openlineage") if "openlineage" in data else None
    timeout = _number(data.get("timeout_seconds", 5.0), where, "timeout_seconds must be a number of seconds")
    retries = _number(data.get("retries", 2), where, "retries must be a whole number", whole=True)
    if timeout <= 0:
        raise ConfigError(f"{where}: timeout_seconds must be above 0, got {timeout!r}")
    return NoticeSettings(tuple(endpoints), lineage, float(timeout), retries)


def _lineage(data: Any, where: str) -> LineageSettings:
    """`[notices.openlineage]`: `namespace`, and the `producer` and `schema_url` URLs."""
    _only(data, keys.names("notices.openlineage"), where)
    for key, value in data.items():
        if not isinstance(value, str) or not value:
            raise ConfigError(f"{where}: {key} must be a string")
        if key != "namespace" and not value.startswith(("https://", "http://")):
            raise ConfigError(f"{where}: {key} must be an http(s) URL a consumer can fetch")
    return LineageSettings(**data)
