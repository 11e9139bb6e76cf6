"""Connection settings from a target URL, and the S3 access that COPY and UNLOAD act with."""

from __future__ import annotations

import math
import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import redshift_connector

from synclog.plugin_api import ConfigError, Location, TargetURL, outages

OUTAGES = (redshift_connector.InterfaceError, redshift_connector.OperationalError, ConnectionError)
"""The driver's connection failures (refused, timed out, closed, failed authentication, and a
socket reset or closed under a statement, which the driver raises as it is): the write waits
for `flush`. Every error the server answers a statement with is a ProgrammingError, which
passes through: SQL or data of ours that Redshift refuses is no outage."""
DEFAULT_PORT = 5439
CONNECT_TIMEOUT_S = 10
"""Seconds a server may take to accept the connection and log in (`?connect_timeout=` overrides):
an unreachable warehouse then costs a sync ten seconds, not the system's minutes-long TCP timeout."""
PASSWORD_ENV = "REDSHIFT_PASSWORD"
IAM_ROLE_ENV = "REDSHIFT_IAM_ROLE"
_QUERY_OPTIONS = {"ssl", "sslmode", "connect_timeout"}
_TARGET_OPTIONS = {"iam_role", "access_key_id", "secret_access_key", "session_token"}
_BOOLEANS = {"true": True, "1": True, "yes": True, "false": False, "0": False, "no": False}


@dataclass(frozen=True)
class ConnectionSettings:
    """Keyword arguments for `redshift_connector.connect`, and how long connecting may take."""

    kwargs: Mapping[str, Any] = field(repr=False)
    connect_timeout: float = CONNECT_TIMEOUT_S

    @classmethod
    def from_url(cls, url: TargetURL) -> ConnectionSettings:
        """Host, port, database and user from the URL; the password from the URL, the config's
        `password_env` (already in `url`) or `$REDSHIFT_PASSWORD`; `ssl`/`sslmode` query options."""
        database = url.path.lstrip("/")
        if not url.host or not database or not url.user:
            raise ConfigError(f"{url}: expected redshift://USER[:PASSWORD]@HOST[:PORT]/DATABASE")
        unknown = sorted(set(url.query) - _QUERY_OPTIONS)
        if unknown:
            raise ConfigError(
                f"{url}: unknown option {unknown[0]!r} (known: {', '.join(sorted(_QUERY_OPTIONS))})"
            )
        password = url.password or os.environ.get(PASSWORD_ENV)
        if not password:
            raise ConfigError(
                f"{url}: no password (in the URL, password_env in synclog.toml, or ${PASSWORD_ENV})"
            )
        kwargs: dict[str, Any] = {
            "host": url.host,
            "port": url.port or DEFAULT_PORT,
            "database": database,
            "user": url.user,
            "password": password,
            "application_name": "synclog",
        }
        if "ssl" in url.query:
            kwargs["ssl"] = _boolean(url, "ssl")
        if "sslmode" in url.query:
            kwargs["sslmode"] = url.query["sslmode"]
        try:
            timeout = float(url.query.get("connect_timeout", CONNECT_TIMEOUT_S))
        except ValueError:
            raise ConfigError(f"{url}: connect_timeout must be a number of seconds") from None
        return cls(kwargs, timeout)

    def connect(self, where: str) -> Any:
        """An autocommit connection in UTC; a one-line TargetError when the server cannot be reached.

        The driver applies its `timeout` to the socket for good, so it would also cut off every
        statement slower than it: once connected, the socket blocks again without a time limit.
        """
        with outages(OUTAGES, f"cannot connect to {where}"):
            connection = redshift_connector.connect(**self.kwargs, timeout=math.ceil(self.connect_timeout))
            connection._usock.settimeout(None)
            connection.autocommit = True
            cursor = connection.cursor()
            cursor.execute("SET TIMEZONE TO 'UTC'")
            cursor.close()
        return connection


def cluster_authority(host: str) -> str:
    """`{cluster identifier}.{region}` of a cluster's (or a serverless workgroup's) endpoint,
    `examplecluster.abc123xyz789.us-west-2.redshift.amazonaws.com`: the authority of the
    OpenLineage naming spec's Redshift row. Any other host (an address, a proxy) as it is."""
    parts = host.split(".")
    if len(parts) == 6 and host.endswith(".amazonaws.com"):
        return f"{parts[0]}.{parts[2]}"
    return host


def _boolean(url: TargetURL, name: str) -> bool:
    value = _BOOLEANS.get(url.query[name].lower())
    if value is None:
        raise ConfigError(f"{url}: {name} must be true or false")
    return value


@dataclass(frozen=True)
class S3Access:
    """Who COPY and UNLOAD act as on S3: an IAM role the cluster may assume, or keys."""

    iam_role: str | None = None
    access_key_id: str | None = field(default=None, repr=False)
    secret_access_key: str | None = field(default=None, repr=False)
    session_token: str | None = field(default=None, repr=False)

    @classmethod
    def resolve(cls, options: Mapping[str, Any], storage: Location) -> S3Access:
        """The target's `iam_role` option, else its key options, else `$REDSHIFT_IAM_ROLE`, else the
        keys `storage` uses (from `[storage]` or the AWS_* variables)."""
        unknown = sorted(set(options) - _TARGET_OPTIONS)
        if unknown:
            known = ", ".join(sorted(_TARGET_OPTIONS))
            raise ConfigError(f"redshift: unknown option {unknown[0]!r} (known: {known})")
        if options.get("iam_role"):
            return cls(iam_role=_checked("iam_role", options["iam_role"]))
        if options.get("access_key_id") or options.get("secret_access_key"):
            return cls._keys(
                options.get("access_key_id"), options.get("secret_access_key"), options.get("session_token")
            )
        if os.environ.get(IAM_ROLE_ENV):
            return cls(iam_role=_checked(IAM_ROLE_ENV, os.environ[IAM_ROLE_ENV]))
        if storage.access_key or storage.secret_key:
            return cls._keys(storage.access_key, storage.secret_key, storage.session_token)
        raise ConfigError(
            f"redshift: COPY and UNLOAD need an IAM role (option iam_role or ${IAM_ROLE_ENV}) or S3 keys "
            "(options access_key_id and secret_access_key, or AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY)"
        )

    @classmethod
    def _keys(cls, key: Any, secret: Any, token: Any) -> S3Access:
        if not key or not secret:
            raise ConfigError("redshift: S3 keys need both access_key_id and secret_access_key")
        return cls(
            access_key_id=_checked("access_key_id", key),
            secret_access_key=_checked("secret_access_key", secret),
            session_token=_checked("session_token", token) if token else None,
        )

    def sql(self) -> str:
        """The authorization clause of a COPY or UNLOAD (it holds secrets: never log it)."""
        if self.iam_role is not None:
            return f"IAM_ROLE '{self.iam_role}'"
        clause = f"ACCESS_KEY_ID '{self.access_key_id}' SECRET_ACCESS_KEY '{self.secret_access_key}'"
        return clause + (f" SESSION_TOKEN '{self.session_token}'" if self.session_token else "")


def _checked(name: str, value: Any) -> str:
    """`value` as it can go between single quotes; its text is never shown."""
    if not isinstance(value, str) or "'" in value or "\\" in value:
        raise ConfigError(f"redshift: {name} must be text without quotes or backslashes")
    return value
