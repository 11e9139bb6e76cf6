"""Connection settings from `snowflake://USER[:PASS]@ACCOUNT/DATABASE?warehouse=…&role=…&schema=…`."""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from synclog.plugin_api import ConfigError, TargetSettings, TargetURL, check_name

DEFAULT_DATABASE = "CENSUS"
PASSWORD_ENV = "SNOWFLAKE_PASSWORD"
"""Where the password comes from when neither the URL nor `password_env` gives one."""

OPTIONS: dict[str, Callable[[str], str | int]] = {
    "warehouse": str,
    "role": str,
    "schema": str,  # the session's current schema; log tables go where `schemas` in synclog.toml says
    "authenticator": str,
    "host": str,  # these three point the connector elsewhere, e.g. at fakesnow's server
    "port": int,
    "protocol": str,
    "login_timeout": int,
    "network_timeout": int,
}
"""URL query options, passed on to `snowflake.connector.connect()`."""

SESSION_PARAMETERS = {"TIMEZONE": "UTC"}
"""Timestamps are written and compared in UTC whatever the account's default time zone."""


@dataclass(frozen=True)
class ConnectionSettings:
    """Everything `snowflake.connector.connect()` needs; the password stays out of `repr()`."""

    account: str
    user: str
    database: str
    password: str | None = field(default=None, repr=False)
    options: dict[str, str | int] = field(default_factory=dict)

    def connect_kwargs(self) -> dict[str, Any]:
        """Keyword arguments for `snowflake.connector.connect()` (qmark: server-side binding)."""
        kwargs: dict[str, Any] = {
            "account": self.account,
            "user": self.user,
            "database": self.database,
            "paramstyle": "qmark",
            "application": "synclog",
            "session_parameters": dict(SESSION_PARAMETERS),
            **self.options,
        }
        if self.password is not None:
            kwargs["password"] = self.password
        return kwargs


def connection_settings(url: TargetURL, settings: TargetSettings) -> ConnectionSettings:
    """Read a `snowflake://` URL; the database is the URL's path, else `settings.database`, else CENSUS."""
    if not url.host:
        raise ConfigError(f"{url}: name the account, e.g. snowflake://USER@ACCOUNT/CENSUS")
    if not url.user:
        raise ConfigError(f"{url}: name the user, e.g. snowflake://USER@{url.host}/CENSUS")
    unknown = sorted(set(url.query) - set(OPTIONS))
    if unknown:
        raise ConfigError(f"{url}: unknown option {unknown[0]!r} (known: {', '.join(sorted(OPTIONS))})")
    options: dict[str, str | int] = {}
    for key, value in url.query.items():
        try:
            options[key] = OPTIONS[key](value)
        except ValueError:
            raise ConfigError(f"{url}: option {key} must be a whole number, got {value!r}") from None
    password = url.password if url.password is not None else os.environ.get(PASSWORD_ENV)
    if password is None and "authenticator" not in options:
        raise ConfigError(
            f"{url}: no password: give it in the URL, in the variable that password_env names, "
            f"or in {PASSWORD_ENV}"
        )
    return ConnectionSettings(url.host, url.user, _database(url, settings), password, options)


def _database(url: TargetURL, settings: TargetSettings) -> str:
    path = url.path.strip("/")
    if "/" in path:
        raise ConfigError(f"{url}: the path names one database; give the schema as ?schema=NAME")
    if path and settings.database and path.upper() != settings.database.upper():
        raise ConfigError(f"{url}: the URL names database {path}, the settings {settings.database}")
    database = (path or settings.database or DEFAULT_DATABASE).upper()
    return check_name(database, what="database", max_length=255)
