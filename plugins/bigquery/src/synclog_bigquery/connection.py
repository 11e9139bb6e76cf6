"""`bigquery://PROJECT?location=…&endpoint=…&retry_seconds=…`: the client, how long its calls
retry, query parameters, and what an outage is."""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import date, datetime
from decimal import Decimal
from typing import Any

import requests
from google.api_core import exceptions
from google.api_core.retry import Retry
from google.auth import exceptions as auth_exceptions
from google.cloud import bigquery
from google.cloud.bigquery.retry import DEFAULT_JOB_RETRY, DEFAULT_RETRY

from synclog.plugin_api import ConfigError, TargetURL, outages

OUTAGES: tuple[type[BaseException], ...] = (
    exceptions.InternalServerError,
    exceptions.BadGateway,
    exceptions.ServiceUnavailable,
    exceptions.GatewayTimeout,
    exceptions.TooManyRequests,
    exceptions.RetryError,
    requests.ConnectionError,
    requests.Timeout,
    requests.exceptions.ChunkedEncodingError,
    auth_exceptions.TransportError,
    ConnectionError,
)
"""BigQuery or the way to it failing (the transport and server errors the client retries, and
RetryError once it gives up). A BadRequest, NotFound or Forbidden is an answer about our request
(SQL, data, names, permissions) and is raised as it is."""

_QUERY_KEYS = ("location", "endpoint", "retry_seconds")
RETRY_SECONDS = 60.0
"""How long a call is retried by default before the write counts as an outage (the client's
own default is 600 s)."""
# String literals, quoted names and comments (where a `?` is text), or a `?` marker.
_SQL_TOKENS = re.compile(
    r"""'(?:\\.|[^'\\])*'|"(?:\\.|[^"\\])*"|`[^`]*`|--[^\n]*|#[^\n]*|/\*.*?\*/|\?""", re.S
)
_LOCATION = re.compile(r"^[A-Za-z][A-Za-z0-9-]*$")
_PROJECT = re.compile(r"^[a-z][a-z0-9.:-]*[a-z0-9]$")


@dataclass(frozen=True)
class ConnectionSettings:
    """Where the log tables live: a project (None: the environment's default), a location, an endpoint."""

    project: str | None
    location: str | None = None
    endpoint: str | None = None
    """A non-Google endpoint (a local stand-in): anonymous credentials are used with it."""
    retry_seconds: float = RETRY_SECONDS
    """How long a failing API call is retried, and how long one request may wait for an answer."""

    @classmethod
    def from_url(cls, url: TargetURL) -> ConnectionSettings:
        """Read `bigquery://PROJECT?location=EU&endpoint=http://127.0.0.1:9050&retry_seconds=30`."""
        unknown = sorted(set(url.query) - set(_QUERY_KEYS))
        if unknown:
            raise ConfigError(f"{url}: unknown option {unknown[0]!r} (known: {', '.join(_QUERY_KEYS)})")
        if url.user or url.port or url.path.strip("/"):
            raise ConfigError(f"{url}: a BigQuery URL is bigquery://PROJECT?location=…[&endpoint=URL]")
        project = url.host or None
        if project is not None and not _PROJECT.match(project):
            raise ConfigError(f"{url}: {project!r} is not a BigQuery project id")
        location = url.query.get("location") or None
        if location is not None and not _LOCATION.match(location):
            raise ConfigError(f"{url}: location {location!r} is not a BigQuery location such as US or EU")
        endpoint = url.query.get("endpoint") or None
        if endpoint is not None and not re.match(r"^https?://", endpoint):
            raise ConfigError(f"{url}: endpoint {endpoint!r} is not an http(s) URL")
        if endpoint is not None and project is None:
            raise ConfigError(f"{url}: name the project when an endpoint is given")
        return cls(project, location, endpoint, _seconds(url, url.query.get("retry_seconds")))

    def retries(self) -> Retries:
        """The retry policies of every call, cut off after `retry_seconds`."""
        return Retries(
            self.retry_seconds,
            DEFAULT_RETRY.with_timeout(self.retry_seconds),
            DEFAULT_JOB_RETRY.with_timeout(self.retry_seconds),
        )

    def client(self) -> bigquery.Client:
        """A client on Google's endpoint with default credentials, or on the given endpoint anonymously."""
        if self.endpoint is None:
            with outages(OUTAGES, "connecting to BigQuery"):
                return bigquery.Client(project=self.project, location=self.location)
        from google.auth.credentials import AnonymousCredentials

        return bigquery.Client(
            project=self.project,
            location=self.location,
            credentials=AnonymousCredentials(),
            client_options={"api_endpoint": self.endpoint},
        )


@dataclass(frozen=True)
class Retries:
    """What every call of the client is given, so that an unreachable BigQuery is told within
    about `seconds` (twice that for a query job's wait, whose job retry wraps the call retry)."""

    seconds: float
    """Every API request's own timeout (`timeout=`)."""
    call: Retry
    """`retry=` of API calls and of job waits."""
    job: Retry
    """`job_retry=` of query jobs and their waits."""


def _seconds(url: TargetURL, value: str | None) -> float:
    if value is None:
        return RETRY_SECONDS
    try:
        seconds = float(value)
    except ValueError:
        seconds = 0.0
    if not 0 < seconds < float("inf"):
        raise ConfigError(f"{url}: retry_seconds must be a positive number of seconds, got {value!r}")
    return seconds


Parameter = bigquery.ScalarQueryParameter | bigquery.ArrayQueryParameter


def named_markers(sql: str) -> tuple[str, int]:
    """`sql` with its `?` markers numbered as `@p0`, `@p1`, …, and how many there were.

    Named parameters bind the same everywhere; local-bigquery binds positional ones in the
    wrong order once a WITH clause precedes them.
    """
    count = 0

    def number(match: re.Match[str]) -> str:
        nonlocal count
        if match.group(0) != "?":
            return match.group(0)
        count += 1
        return f"@p{count - 1}"

    return _SQL_TOKENS.sub(number, sql), count


def query_parameters(values: Sequence[Any]) -> list[Parameter]:
    """Parameters `p0`, `p1`, … (see `named_markers`), typed from the Python values."""
    params: list[Parameter] = []
    for i, value in enumerate(values):
        if isinstance(value, list | tuple):
            kinds = {_scalar_type(v) for v in value if v is not None}
            if len(kinds) > 1:
                raise TypeError(f"a query parameter array mixes types: {sorted(kinds)}")
            params.append(
                bigquery.ArrayQueryParameter(f"p{i}", kinds.pop() if kinds else "STRING", list(value))
            )
        else:
            params.append(bigquery.ScalarQueryParameter(f"p{i}", _scalar_type(value), value))
    return params


def _scalar_type(value: Any) -> str:
    if value is None or isinstance(value, str):
        return "STRING"
    if isinstance(value, bool):
        return "BOOL"
    if isinstance(value, int):
        return "INT64"
    if isinstance(value, float):
        return "FLOAT64"
    if isinstance(value, Decimal):
        return "NUMERIC"
    if isinstance(value, datetime):
        return "TIMESTAMP" if value.tzinfo is not None else "DATETIME"
    if isinstance(value, date):
        return "DATE"
    if isinstance(value, bytes):
        return "BYTES"
    raise TypeError(f"cannot pass a {type(value).__name__} as a BigQuery query parameter")
