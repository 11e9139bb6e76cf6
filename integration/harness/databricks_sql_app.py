"""The HTTP side of the Databricks SQL stand-in: the Statement Execution API (SEA) on Starlette.

Run by ``databricks_sql_server.py`` as a process of its own (it needs its own Spark driver);
``DATABRICKS_NOTES.md`` says what it implements and why. It imports only its sibling
``databricks_sql_engine.py``, so it runs as a plain script::

    python databricks_sql_app.py --port P --volume-root DIR --warehouse-dir DIR \
        --catalog census --conf spark.jars=…alias.jar --conf spark.sql.catalog.census=…

Endpoints (what ``databricks-sql-connector`` with ``use_sea=True`` calls):
``POST/DELETE /api/2.0/sql/sessions[/{id}]``, ``POST /api/2.0/sql/statements``,
``GET/DELETE /api/2.0/sql/statements/{id}``, ``POST …/{id}/cancel``,
``GET …/{id}/result/chunks/{n}``; plus ``GET /results/{token}`` (Arrow "external links")
and ``PUT/GET/DELETE /files/{token}`` (the presigned URLs of Volume PUT/GET/REMOVE).
Every ``/api`` request needs a bearer token; any non-empty token is accepted.
"""

from __future__ import annotations

import argparse
import asyncio
import base64
import datetime as dt
import decimal
import json
import logging
import os
import re
import time
import uuid
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pyarrow as pa
import uvicorn
from databricks_sql_engine import Engine, Result, StatementError
from pyspark.sql import SparkSession
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

log = logging.getLogger("synclog.databricks_sql")

WAREHOUSE_ID = "synclog-local"
_LINK_TTL_S = 900


class ApiError(Exception):
    """A request the API refuses outright (an HTTP 4xx with a JSON error body)."""

    def __init__(self, status: int, error_code: str, message: str) -> None:
        super().__init__(message)
        self.status = status
        self.error_code = error_code
        self.message = message


@dataclass
class Statement:
    """A submitted statement: its future, the result format asked for, its served links."""

    id: str
    session_id: str
    future: Future[Result]
    fmt: str
    disposition: str
    compression: str | None
    row_limit: int | None
    tag: str
    canceled: bool = False
    links: dict[str, bytes] = field(default_factory=dict)
    final: dict[str, Any] | None = None  # the response once it succeeded or failed


def _json_cell(value: Any) -> str | None:
    """A value as SEA's JSON_ARRAY format writes it: text, or null."""
    if value is None:
        return None
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, dt.datetime):
        if value.tzinfo is not None:
            value = value.astimezone(dt.UTC)
            return value.strftime("%Y-%m-%dT%H:%M:%S.%f")[:-3] + "Z"
        return value.isoformat()
    if isinstance(value, dt.date | decimal.Decimal | int | float | str):
        return value.isoformat() if isinstance(value, dt.date) else str(value)
    if isinstance(value, bytes):
        return value.hex()
    return json.dumps(value, default=str)


def _arrow_stream(table: pa.Table) -> bytes:
    sink = pa.BufferOutputStream()
    with pa.ipc.new_stream(sink, table.schema) as writer:
        writer.write_table(table)
    return sink.getvalue().to_pybytes()


# --------------------------------------------------------------------------- HTTP


class Api:
    """The Starlette routes over an :class:`Engine`."""

    def __init__(self, engine: Engine, workers: int = 2) -> None:
        self.engine = engine
        self.statements: dict[str, Statement] = {}
        self.pool = ThreadPoolExecutor(max_workers=workers, thread_name_prefix="statement")
        routes = [
            Route("/healthz", self.healthz),
            Route("/api/2.0/sql/sessions", self.create_session, methods=["POST"]),
            Route("/api/2.0/sql/sessions/{session_id}", self.delete_session, methods=["DELETE"]),
            Route("/api/2.0/sql/statements", self.execute, methods=["POST"]),
            Route("/api/2.0/sql/statements/{statement_id}", self.get_statement, methods=["GET"]),
            Route("/api/2.0/sql/statements/{statement_id}", self.close_statement, methods=["DELETE"]),
            Route("/api/2.0/sql/statements/{statement_id}/cancel", self.cancel, methods=["POST"]),
            Route("/api/2.0/sql/statements/{statement_id}/result/chunks/{chunk:int}", self.chunk),
            Route("/results/{token}", self.download),
            Route("/files/{token}", self.volume_file, methods=["PUT", "GET", "DELETE"]),
        ]
        self.app = Starlette(routes=routes, exception_handlers={ApiError: self._api_error})
        self.app.add_middleware(_BearerAuth)

    async def _api_error(self, _request: Request, exc: Exception) -> Response:
        assert isinstance(exc, ApiError)
        return JSONResponse({"error_code": exc.error_code, "message": exc.message}, status_code=exc.status)

    async def healthz(self, _request: Request) -> Response:
        return JSONResponse({"ok": True, "pid": os.getpid()})

    async def create_session(self, request: Request) -> Response:
        body = await _json(request)
        _check_warehouse(body)
        try:
            session_id = await asyncio.to_thread(
                self.engine.open_session,
                body.get("catalog"),
                body.get("schema"),
                body.get("session_confs") or {},
            )
        except StatementError as exc:
            raise ApiError(404, exc.error_code, exc.message) from None
        return JSONResponse({"session_id": session_id})

    async def delete_session(self, request: Request) -> Response:
        if self.engine.sessions.pop(request.path_params["session_id"], None) is None:
            raise ApiError(404, "NOT_FOUND", "session not found")
        return JSONResponse({})

    async def execute(self, request: Request) -> Response:
        body = await _json(request)
        _check_warehouse(body)
        session = self.engine.sessions.get(str(body.get("session_id")))
        if session is None:
            raise ApiError(404, "NOT_FOUND", f"session {body.get('session_id')!r} not found or closed")
        fmt = str(body.get("format") or "JSON_ARRAY")
        disposition = str(body.get("disposition") or "INLINE")
        if (fmt, disposition) not in {
            ("JSON_ARRAY", "INLINE"),
            ("ARROW_STREAM", "EXTERNAL_LINKS"),
            ("ARROW_STREAM", "INLINE_OR_EXTERNAL_LINKS"),
        }:
            raise ApiError(400, "INVALID_PARAMETER_VALUE", f"format {fmt} with disposition {disposition}")
        wait = _wait_timeout(str(body.get("wait_timeout") or "10s"))
        statement_id = str(uuid.uuid4())
        tag = f"stmt-{statement_id}"
        future = self.pool.submit(
            self.engine.execute, session, str(body.get("statement") or ""), body.get("parameters") or [], tag
        )
        statement = Statement(
            statement_id,
            str(body["session_id"]),
            future,
            fmt,
            disposition,
            body.get("result_compression"),
            body.get("row_limit"),
            tag,
        )
        self.statements[statement_id] = statement
        if wait:
            await asyncio.wait([asyncio.wrap_future(future)], timeout=wait)
        if not future.done() and wait and body.get("on_wait_timeout") == "CANCEL":
            self._cancel(statement)
        return JSONResponse(await asyncio.to_thread(self._describe, statement, str(request.base_url)))

    async def get_statement(self, request: Request) -> Response:
        statement = self._statement(request)
        return JSONResponse(await asyncio.to_thread(self._describe, statement, str(request.base_url)))

    async def close_statement(self, request: Request) -> Response:
        statement = self._statement(request)
        self._cancel(statement)
        self.statements.pop(statement.id, None)
        return JSONResponse({})

    async def cancel(self, request: Request) -> Response:
        self._cancel(self._statement(request))
        return JSONResponse({})

    async def chunk(self, request: Request) -> Response:
        statement = self._statement(request)
        described = await asyncio.to_thread(self._describe, statement, str(request.base_url))
        if request.path_params["chunk"] != 0 or "result" not in described:
            raise ApiError(404, "NOT_FOUND", "no such chunk")
        return JSONResponse(described["result"])

    async def download(self, request: Request) -> Response:
        for statement in self.statements.values():
            data = statement.links.get(request.path_params["token"])
            if data is not None:
                return Response(data, media_type="application/vnd.apache.arrow.stream")
        return JSONResponse({"error_code": "NOT_FOUND", "message": "no such result"}, status_code=404)

    async def volume_file(self, request: Request) -> Response:
        transfer = self.engine.transfers.get(request.path_params["token"])
        if transfer is None or transfer.expires < time.monotonic():
            return Response("expired or unknown URL", status_code=403)
        method = request.method
        if (transfer.operation, method) not in {("PUT", "PUT"), ("GET", "GET"), ("REMOVE", "DELETE")}:
            return Response(f"this URL is for {transfer.operation}", status_code=403)
        self.engine.transfers.pop(request.path_params["token"], None)
        path = transfer.path
        if method == "PUT":
            if path.exists() and not transfer.overwrite:
                return Response("FILE_IN_STAGING_PATH_ALREADY_EXISTS", status_code=409)
            data = await request.body()
            path.parent.mkdir(parents=True, exist_ok=True)
            partial = path.with_name(f".{path.name}.{uuid.uuid4().hex}.partial")
            partial.write_bytes(data)
            partial.replace(path)
            return Response(status_code=201)
        if not path.is_file():
            return Response("NOT_FOUND", status_code=404)
        if method == "GET":
            return Response(path.read_bytes(), media_type="application/octet-stream")
        path.unlink()
        return Response(status_code=204)

    def _statement(self, request: Request) -> Statement:
        statement = self.statements.get(request.path_params["statement_id"])
        if statement is None:
            raise ApiError(404, "NOT_FOUND", "statement not found or closed")
        return statement

    def _cancel(self, statement: Statement) -> None:
        if statement.future.done():
            return
        statement.canceled = True
        if not statement.future.cancel():
            session = self.engine.sessions.get(statement.session_id)
            if session is not None:
                session.interruptTag(statement.tag)

    def _describe(self, statement: Statement, base_url: str) -> dict[str, Any]:
        """The SEA statement response: status, then manifest and result once it succeeded."""
        if statement.final is not None:
            return statement.final
        body: dict[str, Any] = {"statement_id": statement.id}
        future = statement.future
        if statement.canceled:
            body["status"] = {"state": "CANCELED"}
            return body
        if not future.done():
            body["status"] = {"state": "RUNNING" if future.running() else "PENDING"}
            return body
        error = future.exception()
        if error is not None:
            if not isinstance(error, StatementError):
                log.exception("statement %s failed", statement.id, exc_info=error)
                error = StatementError(f"{type(error).__name__}: {error}", "INTERNAL_ERROR")
            status: dict[str, Any] = {
                "state": "FAILED",
                "error": {"error_code": error.error_code, "message": error.message},
            }
            if error.sql_state:
                status["sql_state"] = error.sql_state
            body["status"] = status
            statement.final = body
            return body
        result = future.result()
        table = result.table
        truncated = False
        if statement.row_limit and table.num_rows > statement.row_limit:
            table, truncated = table.slice(0, statement.row_limit), True
        manifest: dict[str, Any] = {
            "format": statement.fmt,
            "schema": {"column_count": len(result.columns), "columns": result.columns},
            "total_row_count": table.num_rows,
            "truncated": truncated,
            "is_volume_operation": result.volume_operation,
        }
        chunk: dict[str, Any] = {"chunk_index": 0, "row_offset": 0, "row_count": table.num_rows}
        if statement.fmt == "JSON_ARRAY":
            rows = [[_json_cell(v) for v in row.values()] for row in table.to_pylist()]
            manifest.update(total_chunk_count=1, total_byte_count=0, chunks=[chunk])
            result_body = {**chunk, "data_array": rows} if rows else dict(chunk)
        else:
            data = _arrow_stream(table)
            if statement.compression == "LZ4_FRAME" and _lz4 is not None:
                data = _lz4.compress(data)
                manifest["result_compression"] = "LZ4_FRAME"
            chunk["byte_count"] = len(data)
            manifest["total_byte_count"] = len(data)
            if statement.disposition == "INLINE_OR_EXTERNAL_LINKS":
                manifest.update(total_chunk_count=1, chunks=[chunk])
                result_body = {**chunk, "attachment": base64.b64encode(data).decode()}
            elif table.num_rows == 0:
                manifest.update(total_chunk_count=0, chunks=[])
                result_body = {}
            else:
                token = uuid.uuid4().hex
                statement.links[token] = data
                expires = dt.datetime.now(dt.UTC) + dt.timedelta(seconds=_LINK_TTL_S)
                link = {
                    **chunk,
                    "external_link": f"{base_url.rstrip('/')}/results/{token}",
                    "expiration": expires.isoformat().replace("+00:00", "Z"),
                }
                manifest.update(total_chunk_count=1, chunks=[chunk])
                result_body = {"external_links": [link]}
        body.update(status={"state": "SUCCEEDED"}, manifest=manifest, result=result_body)
        statement.final = body
        return body


try:  # the connector depends on lz4, so it is here whenever the connector is
    import lz4.frame as _lz4
except ImportError:  # pragma: no cover
    _lz4 = None  # type: ignore[assignment]


class _BearerAuth:
    """Every ``/api`` request needs ``Authorization: Bearer <anything non-empty>``."""

    def __init__(self, app: Any) -> None:
        self.app = app

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] == "http" and scope["path"].startswith("/api/"):
            headers = dict(scope.get("headers") or [])
            auth = headers.get(b"authorization", b"").decode("latin-1")
            scheme, _, token = auth.partition(" ")
            if scheme.lower() != "bearer" or not token.strip():
                response = JSONResponse(
                    {"error_code": "UNAUTHENTICATED", "message": "Authorization: Bearer <token> is required"},
                    status_code=401,
                )
                await response(scope, receive, send)
                return
        await self.app(scope, receive, send)


async def _json(request: Request) -> dict[str, Any]:
    try:
        body = await request.json()
    except ValueError:
        raise ApiError(400, "MALFORMED_REQUEST", "the body is not JSON") from None
    if not isinstance(body, dict):
        raise ApiError(400, "MALFORMED_REQUEST", "the body is not a JSON object")
    return body


def _check_warehouse(body: dict[str, Any]) -> None:
    if body.get("warehouse_id") != WAREHOUSE_ID:
        raise ApiError(
            404, "RESOURCE_DOES_NOT_EXIST", f"warehouse {body.get('warehouse_id')!r} does not exist"
        )


def _wait_timeout(text: str) -> float:
    match = re.fullmatch(r"(\d+)s", text.strip())
    seconds = int(match.group(1)) if match else -1
    if seconds != 0 and not 5 <= seconds <= 50:
        raise ApiError(400, "INVALID_PARAMETER_VALUE", f"wait_timeout must be 0s or 5s to 50s, not {text!r}")
    return float(seconds)


# --------------------------------------------------------------------------- main


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--volume-root", type=Path, required=True)
    parser.add_argument("--warehouse-dir", type=Path, required=True)
    parser.add_argument("--catalog", action="append", default=[], help="a catalog alias configured in --conf")
    parser.add_argument("--conf", action="append", default=[], help="KEY=VALUE for the Spark session")
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s")

    started = time.monotonic()
    builder = (
        SparkSession.builder.master("local[2]")
        .appName("synclog-databricks-sql")
        .config("spark.driver.memory", "512m")
        .config("spark.ui.enabled", "false")
        .config("spark.ui.showConsoleProgress", "false")
        .config("spark.sql.shuffle.partitions", "2")
        .config("spark.sql.warehouse.dir", str(args.warehouse_dir))
        .config("spark.sql.session.timeZone", "UTC")
    )
    for item in args.conf:
        key, _, value = item.partition("=")
        builder = builder.config(key, value)
    spark = builder.getOrCreate()
    spark.sparkContext.setLogLevel("WARN")
    args.volume_root.mkdir(parents=True, exist_ok=True)
    engine = Engine(spark, args.volume_root, args.catalog, f"http://{args.host}:{args.port}")
    warm = engine.open_session(args.catalog[0] if args.catalog else None, None, {})  # load the catalog plugin
    engine.sessions[warm].sql("SELECT 1").toArrow()
    engine.sessions.pop(warm)
    api = Api(engine)
    log.info("Spark ready in %.1fs; serving on %s", time.monotonic() - started, engine.base_url)
    uvicorn.run(api.app, host=args.host, port=args.port, log_level="warning", access_log=False)


if __name__ == "__main__":
    main()
