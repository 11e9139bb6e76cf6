"""`bigquery://PROJECT?location=…&endpoint=…&retry_seconds=…`: the client, how long its calls
retry, query parameters, what an outage is, and the target's `SqlClient` over query jobs."""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping, Sequence
from contextlib import AbstractContextManager, contextmanager, suppress
from dataclasses import dataclass
from datetime import date, datetime
from decimal import Decimal
from typing import Any

import pyarrow as pa
import requests
from google.api_core import exceptions
from google.api_core.retry import Retry
from google.auth import exceptions as auth_exceptions
from google.cloud import bigquery
from google.cloud.bigquery.retry import DEFAULT_JOB_RETRY, DEFAULT_RETRY
from google.cloud.bigquery.table import RowIterator

from synclog.plugin_api import ConfigError, Params, SqlClient, SqlDialect, TargetError, TargetURL, outages

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


def query_parameters(values: Mapping[str, Any]) -> list[Parameter]:
    """Named parameters (`@p0`: `BigQueryDialect` names the core's markers), typed from the
    Python values."""
    params: list[Parameter] = []
    for name, value in values.items():
        if isinstance(value, list | tuple):
            kinds = {_scalar_type(v) for v in value if v is not None}
            if len(kinds) > 1:
                raise TypeError(f"a query parameter array mixes types: {sorted(kinds)}")
            params.append(bigquery.ArrayQueryParameter(name, kinds.pop() if kinds else "STRING", list(value)))
        else:
            params.append(bigquery.ScalarQueryParameter(name, _scalar_type(value), value))
    return params


class BigQueryClient(SqlClient):
    """Query jobs through the client library, waited for with `retries`; a transaction is a
    BigQuery session holding one multi-statement transaction."""

    def __init__(self, settings: ConnectionSettings, dialect: SqlDialect) -> None:
        super().__init__(dialect)
        self.api = settings.client()
        """The client library's client (tables, datasets and load jobs go through its API)."""
        self.retries = settings.retries()
        self._session: str | None = None

    def errors(self, what: str) -> AbstractContextManager[None]:
        """Inside, BigQuery's outages are one-line TargetErrors saying what failed."""
        return outages(OUTAGES, f"BigQuery {what}")

    def run(self, sql: str, params: Params = (), **config: Any) -> bigquery.QueryJob:
        """Run `sql` with its named parameters (a mapping, or prepared `Parameter`s) and wait for it."""
        if isinstance(params, Mapping):
            parameters: Sequence[Any] = query_parameters(params)
        else:
            parameters = params
        job_config = bigquery.QueryJobConfig(query_parameters=list(parameters), **config)
        if self._session is not None:
            job_config.connection_properties = [bigquery.ConnectionProperty("session_id", self._session)]
        with self.errors("query"):
            job = self.api.query(
                sql,
                job_config=job_config,
                retry=self.retries.call,
                job_retry=self.retries.job,
                timeout=self.retries.seconds,
            )
            self.rows(job)
        return job

    def rows(self, job: bigquery.QueryJob, page_size: int | None = None) -> RowIterator:
        """Wait for `job` (retrying as every call does); its result's rows, fetched as read."""
        return job.result(page_size=page_size, retry=self.retries.call, job_retry=self.retries.job)

    def execute_bound(self, sql: str, params: Params) -> int:
        return int(self.run(sql, params).num_dml_affected_rows or 0)

    def fetch_bound(self, sql: str, params: Params) -> list[tuple[Any, ...]]:
        job = self.run(sql, params)
        with self.errors("reading a result"):
            return [tuple(row.values()) for row in self.rows(job)]

    def query_bound(self, sql: str, params: Params) -> pa.Table:
        job = self.run(sql, params)
        with self.errors("reading a result"):
            return self.rows(job).to_arrow(create_bqstorage_client=False)

    def batches_bound(self, sql: str, params: Params, schema: pa.Schema) -> Iterator[pa.RecordBatch]:
        """The finished query's result page by page (`chunk_rows` rows a page), fetched as consumed."""
        job = self.run(sql, params)
        with self.errors("reading a result"):
            pages = iter(self.rows(job, self.chunk_rows).to_arrow_iterable())
        while True:
            with self.errors("reading a result"):
                page = next(pages, None)
            if page is None:
                return
            yield page

    @contextmanager
    def transaction(self) -> Iterator[None]:
        """A BigQuery session holding one multi-statement transaction."""
        if self._session is not None:
            raise RuntimeError("BigQuery transactions do not nest")
        session = self.run("BEGIN TRANSACTION", create_session=True).session_info
        if session is None:
            raise TargetError("BigQuery opened no session for the transaction")
        self._session = session.session_id
        try:
            yield
            self.run("COMMIT TRANSACTION")
        except BaseException:
            with suppress(TargetError, exceptions.GoogleAPIError):  # the error that ended it is raised
                self.run("ROLLBACK TRANSACTION")
            raise
        finally:
            with suppress(TargetError, exceptions.GoogleAPIError):
                self.run("CALL BQ.ABORT_SESSION()")
            self._session = None

    def close(self) -> None:
        self.api.close()


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
