"""Connection parameters from a target URL, safe to ship to Spark executors."""

from __future__ import annotations

import os
from typing import Any

import psycopg
from psycopg.types.string import TextLoader

from synclog.plugin_api import ConfigError, TargetURL, outages

OUTAGES = (psycopg.OperationalError, psycopg.InterfaceError, psycopg.InternalError)
"""The server is unreachable, went away, shut down, ran out of resources or cancelled the
statement: the write waits for `flush`. Errors in our SQL or data are not outages."""
DEFAULT_PORT = 5432
CONNECT_TIMEOUT_S = 10
"""Seconds to wait for the server to answer (`?connect_timeout=` overrides): an unreachable
warehouse then costs a sync ten seconds, not the operating system's minutes-long TCP timeout."""


def conninfo(url: TargetURL) -> dict[str, Any]:
    """libpq keywords for `url`: host, port, user, database, password and query options.

    The password comes from the URL, else the config's `password_env` (already in `url`),
    else `$PGPASSWORD` read here on the driver, so executors elsewhere receive it too.
    """
    database = url.path.lstrip("/")
    if not url.host or not database:
        raise ConfigError(f"{url}: expected postgresql://USER[:PASSWORD]@HOST[:PORT]/DATABASE")
    params: dict[str, Any] = {
        **url.query,
        "host": url.host,
        "port": url.port or DEFAULT_PORT,
        "dbname": database,
        "application_name": url.query.get("application_name", "synclog"),
        "connect_timeout": url.query.get("connect_timeout", CONNECT_TIMEOUT_S),
    }
    if url.user:
        params["user"] = url.user
    password = url.password or os.environ.get("PGPASSWORD")
    if password:
        params["password"] = password
    return params


def connect(params: dict[str, Any], *, where: str) -> psycopg.Connection[Any]:
    """An autocommit connection in UTC that returns JSON as text; a one-line TargetError if not."""
    options = " ".join(filter(None, (params.get("options"), "-c TimeZone=UTC")))
    with outages(OUTAGES, f"cannot connect to {where}"):
        conn = psycopg.connect(**{**params, "options": options}, autocommit=True)
    for json_type in ("json", "jsonb"):
        conn.adapters.register_loader(json_type, TextLoader)
    return conn
