"""The pages of `synclog serve`: syncs, a sync's runs, a run's records, and downloads.

Every value the pages show comes from the log tables, and payloads and error messages are the
destinations' and the source's untrusted text: Jinja2 escapes everything it renders, no page
carries a script, and the Content-Security-Policy forbids scripts besides. Only GET requests are
answered; nothing is written. Bound to a loopback address the app answers only requests whose
Host is a loopback name (a web page elsewhere cannot rebind a name of its own to it); with a
token, every request must carry it (a `?token=` link sets a cookie once, or `Authorization:
Bearer …`).
"""

from __future__ import annotations

import hashlib
import hmac
import ipaddress
import json
import threading
from collections.abc import Awaitable, Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, replace
from datetime import datetime
from importlib import resources
from typing import Any
from urllib.parse import urlencode, urlsplit

from jinja2 import Environment, PackageLoader
from starlette.applications import Starlette
from starlette.exceptions import HTTPException
from starlette.middleware import Middleware
from starlette.middleware.base import BaseHTTPMiddleware
from starlette.requests import Request
from starlette.responses import HTMLResponse, PlainTextResponse, RedirectResponse, Response
from starlette.routing import Route

from synclog.config import Config
from synclog.errors import SynclogError, TargetError, first_line
from synclog.plugins.manager import registry
from synclog.result_files import encode_rows
from synclog.targets.base import Target
from synclog.targets.connector import Connector
from synclog.tracking import (
    RecordQuery,
    RunQuery,
    Tracked,
    find_records,
    find_runs,
    find_syncs,
    held_layouts,
)

PAGE_SIZE = 50
"""Records per page."""
RUNS_PAGE = 30
"""Runs per page (and bars in the chart)."""
DOWNLOAD_LIMIT = 100_000
"""Rows at most in one download."""
TOKEN_ENV = "SYNCLOG_SERVE_TOKEN"
"""The environment variable holding the access token (instead of `--auth-token`)."""
_COOKIE = "synclog_session"
_FORMATS = {"csv": "text/csv; charset=utf-8", "jsonl": "application/x-ndjson; charset=utf-8"}
_SECURITY_HEADERS = {
    "content-security-policy": (
        "default-src 'none'; style-src 'self'; img-src 'self' data:; form-action 'self'; "
        "base-uri 'none'; frame-ancestors 'none'"
    ),
    "x-content-type-options": "nosniff",
    "referrer-policy": "no-referrer",
    "x-frame-options": "DENY",
    "cache-control": "no-store",
}


class Viewer:
    """The target the pages read, used by one request at a time.

    A target whose open connection keeps writers out (`Capabilities.exclusive`: a DuckDB file) is
    opened for each request and closed after it, so that a writer (the demo, `synclog write`)
    can take it between page views; other targets keep their connection (and connect again
    after a failure).
    """

    def __init__(self, connector: Connector, config: Config) -> None:
        self.connector = connector
        self.config = config
        self._lock = threading.Lock()

    @classmethod
    def open(cls, target: str | None, config: Config) -> Viewer:
        """The viewer of a target URL or name from `synclog.toml` (not connected yet)."""
        url, settings = config.resolve_target(target)
        return cls(Connector.for_type(registry().for_url(url), url, settings), config)

    @property
    def url(self) -> str:
        return str(self.connector.url)

    @contextmanager
    def target(self) -> Iterator[Target]:
        """The connected target, for one request (connected again after a failure)."""
        with self._lock:
            per_request = False
            try:
                target = self.connector.target
                per_request = self.connector.capabilities.exclusive
                yield target
            except TargetError:
                self.connector.reset()
                raise
            finally:
                if per_request:
                    self.connector.reset()

    def close(self) -> None:
        self.connector.close()


def is_loopback(host: str) -> bool:
    """Whether `host` (a name or an address) is this machine only."""
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def create_app(viewer: Viewer, token: str | None = None) -> Starlette:
    """The web app over `viewer`; with `token`, every request must carry it."""
    env = Environment(loader=PackageLoader("synclog.serve", "templates"), autoescape=True)
    env.filters.update(when=_when, number=_number, fields=_fields)
    css = resources.files("synclog.serve").joinpath("static/style.css").read_text(encoding="utf-8")
    pages = _Pages(viewer, env)

    def style(_request: Request) -> Response:
        return Response(css, media_type="text/css", headers={"cache-control": "max-age=3600"})

    def failed(request: Request, exc: Exception) -> Response:
        if isinstance(exc, HTTPException):
            status, message = exc.status_code, str(exc.detail)
        elif isinstance(exc, TargetError):
            status, message = 503, first_line(exc)
        else:
            status, message = 400, first_line(exc)
        return pages.render("error.html", status=status, message=message, code=status)

    routes = [
        Route("/", pages.syncs),
        Route("/syncs/{sync_id:int}", pages.runs),
        Route("/syncs/{sync_id:int}/runs/{run_id:int}", pages.records),
        Route("/syncs/{sync_id:int}/runs/{run_id:int}/records.{fmt:str}", pages.download),
        Route("/static/style.css", style),
    ]
    middleware = [Middleware(_Headers), Middleware(_Gate, token=token)]
    return Starlette(
        routes=routes,
        middleware=middleware,
        exception_handlers={HTTPException: failed, SynclogError: failed},
    )


@dataclass(frozen=True)
class _Selection:
    """What the records page shows: a run's records, filtered, one page."""

    sync_id: int
    run_id: int
    layout: str | None
    status: Tracked | None
    search: str
    offset: int

    @classmethod
    def of(cls, request: Request) -> _Selection:
        params = request.query_params
        status = params.get("status") or None
        if status is not None and status not in {s.value for s in Tracked}:
            raise HTTPException(
                400, f"unknown status {status!r}: one of {', '.join(s.value for s in Tracked)}"
            )
        return cls(
            sync_id=request.path_params["sync_id"],
            run_id=request.path_params["run_id"],
            layout=params.get("layout") or None,
            status=Tracked(status) if status else None,
            search=(params.get("search") or "").strip()[:500],
            offset=_offset(params.get("offset")),
        )

    def link(self, **changes: Any) -> str:
        """The records page of this selection, with `changes` (None drops a parameter)."""
        params = {
            "layout": self.layout,
            "status": self.status.value if self.status else None,
            "search": self.search or None,
            "offset": self.offset or None,
        } | changes
        return _query(f"/syncs/{self.sync_id}/runs/{self.run_id}", params)

    def download(self, fmt: str) -> str:
        params = {
            "layout": self.layout,
            "status": self.status.value if self.status else None,
            "search": self.search or None,
        }
        return _query(f"/syncs/{self.sync_id}/runs/{self.run_id}/records.{fmt}", params)


class _Pages:
    def __init__(self, viewer: Viewer, env: Environment) -> None:
        self.viewer = viewer
        self.env = env

    def render(self, template: str, status: int = 200, **context: Any) -> HTMLResponse:
        page = self.env.get_template(template).render(target=self.viewer.url, **context)
        return HTMLResponse(page, status_code=status)

    def _layout(self, target: Target, request: Request) -> tuple[str | None, list[str]]:
        """The layout asked for (or the first the target holds records in), and those it holds."""
        held = held_layouts(target)
        asked = request.query_params.get("layout") or None
        if asked is not None and asked not in held:
            raise HTTPException(404, f"{self.viewer.url} holds no records in the {asked!r} layout")
        return asked or (held[0] if held else None), held

    def syncs(self, request: Request) -> Response:
        with self.viewer.target() as target:
            layout, held = self._layout(target, request)
            syncs = find_syncs(target, layout).to_pylist() if layout else []
        return self.render("syncs.html", layout=layout, held=held, syncs=syncs, query=_query)

    def runs(self, request: Request) -> Response:
        sync_id = request.path_params["sync_id"]
        offset = _offset(request.query_params.get("offset"))
        with self.viewer.target() as target:
            layout, held = self._layout(target, request)
            if layout is None:
                raise HTTPException(404, f"{self.viewer.url} holds no logged records")
            runs = find_runs(target, RunQuery(sync_id, RUNS_PAGE + 1, offset), layout).to_pylist()
        if not runs and offset == 0:
            raise HTTPException(404, f"sync {sync_id} has no runs in the {layout} layout")
        more, runs = len(runs) > RUNS_PAGE, runs[:RUNS_PAGE]
        return self.render(
            "runs.html",
            sync_id=sync_id,
            layout=layout,
            held=held,
            runs=runs,
            chart=_chart(runs),
            newer=_query(f"/syncs/{sync_id}", {"layout": layout, "offset": offset - RUNS_PAGE or None})
            if offset
            else None,
            older=_query(f"/syncs/{sync_id}", {"layout": layout, "offset": offset + RUNS_PAGE})
            if more
            else None,
            query=_query,
        )

    def records(self, request: Request) -> Response:
        selection = _Selection.of(request)
        with self.viewer.target() as target:
            layout, _held = self._layout(target, request)
            if layout is None:
                raise HTTPException(404, f"{self.viewer.url} holds no logged records")
            selection = replace(selection, layout=layout)
            run = _run(target, selection.sync_id, selection.run_id, layout)
            query = self._query(selection, PAGE_SIZE + 1, selection.offset)
            records = find_records(target, query, layout).to_pylist()
        more, records = len(records) > PAGE_SIZE, records[:PAGE_SIZE]
        statuses = [("", "all", run["records"])] + [
            (s.value, s.value, run[s.value]) for s in Tracked if s.value in run
        ]
        return self.render(
            "records.html",
            run=run,
            layout=layout,
            selection=selection,
            statuses=statuses,
            records=[{**r, "payload": _pretty(r["record_payload"])} for r in records],
            first=selection.offset + 1,
            previous=selection.link(offset=max(selection.offset - PAGE_SIZE, 0) or None)
            if selection.offset
            else None,
            next=selection.link(offset=selection.offset + PAGE_SIZE) if more else None,
            page_size=PAGE_SIZE,
            download_limit=DOWNLOAD_LIMIT,
        )

    def download(self, request: Request) -> Response:
        fmt = request.path_params["fmt"]
        if fmt not in _FORMATS:
            raise HTTPException(404, f"records.{fmt}: download records.csv or records.jsonl")
        selection = _Selection.of(request)
        with self.viewer.target() as target:
            layout, _held = self._layout(target, request)
            if layout is None:
                raise HTTPException(404, f"{self.viewer.url} holds no logged records")
            table = find_records(target, self._query(selection, DOWNLOAD_LIMIT, 0), layout)
        name = "-".join(
            [f"sync-{selection.sync_id}", f"run-{selection.run_id}"]
            + ([selection.status.value] if selection.status else [])
        )
        return Response(
            encode_rows(table, f".{fmt}"),
            media_type=_FORMATS[fmt],
            headers={"content-disposition": f'attachment; filename="{name}.{fmt}"'},
        )

    def _query(self, selection: _Selection, limit: int, offset: int) -> RecordQuery:
        policy = self.viewer.config.sync(selection.sync_id).policy
        return RecordQuery(
            sync_id=selection.sync_id,
            sync_run_id=selection.run_id,
            status=selection.status,
            identifiers=policy.search_terms(selection.search) if selection.search else (),
            limit=limit,
            offset=offset,
        )


def _run(target: Target, sync_id: int, run_id: int, layout: str) -> dict[str, Any]:
    """One run's row of `find_runs` (404 when the sync has no such run)."""
    offset = 0
    while True:
        runs = find_runs(target, RunQuery(sync_id, 500, offset), layout).to_pylist()
        for run in runs:
            if run["sync_run_id"] == run_id:
                return run
        if len(runs) < 500:
            raise HTTPException(404, f"sync {sync_id} has no run {run_id} in the {layout} layout")
        offset += 500


def _chart(runs: list[dict[str, Any]]) -> dict[str, Any]:
    """Bars of succeeded and rejected records per run, oldest first, for an inline SVG."""
    height, bar, gap = 120, 20, 6
    shown = list(reversed(runs))
    top = max([(r["succeeded"] or 0) + (r["rejected"] or 0) for r in shown] + [1])
    bars = []
    for i, run in enumerate(shown):
        succeeded, rejected = run["succeeded"] or 0, run["rejected"] or 0
        s_height = round(succeeded / top * height, 1)
        r_height = round(rejected / top * height, 1)
        bars.append(
            {
                "x": gap + i * (bar + gap),
                "run": run["sync_run_id"],
                "succeeded": succeeded,
                "rejected": rejected,
                "s_y": height - s_height,
                "s_height": s_height,
                "r_y": height - s_height - r_height,
                "r_height": r_height,
            }
        )
    return {"bars": bars, "width": gap + len(shown) * (bar + gap), "height": height, "bar": bar}


def _offset(text: str | None) -> int:
    if not text:
        return 0
    if not text.isdigit():
        raise HTTPException(400, f"offset must be a whole number, got {text!r}")
    return int(text)


def _query(path: str, params: dict[str, Any]) -> str:
    kept = {k: v for k, v in params.items() if v is not None}
    return f"{path}?{urlencode(kept)}" if kept else path


def _pretty(payload: str | None) -> str | None:
    """A JSON payload indented for reading; any other text as it is."""
    if payload is None:
        return None
    try:
        return json.dumps(json.loads(payload), indent=2, ensure_ascii=False)
    except ValueError:
        return payload


def _when(value: datetime | None) -> str:
    return "" if value is None else value.strftime("%Y-%m-%d %H:%M:%S %Z").strip()


def _number(value: int | None) -> str:
    return "" if value is None else f"{value:,}"


def _fields(text: str | None) -> list[tuple[str, str]]:
    """The top-level fields of a JSON object (a run's `extra`) as (name, value) pairs to show."""
    try:
        found = json.loads(text) if text else {}
    except ValueError:
        return [("", text or "")]
    if not isinstance(found, dict):
        return [("", str(found))]
    return [(str(k), v if isinstance(v, str) else json.dumps(v)) for k, v in found.items()]


_Next = Callable[[Request], Awaitable[Response]]


class _Headers(BaseHTTPMiddleware):
    """Security headers on every response."""

    async def dispatch(
        self, request: Request, call_next: Callable[[Request], Awaitable[Response]]
    ) -> Response:
        response = await call_next(request)
        for name, value in _SECURITY_HEADERS.items():
            response.headers.setdefault(name, value)
        return response


class _Gate(BaseHTTPMiddleware):
    """Only GET (and HEAD); with a token, only requests carrying it; without, only loopback names."""

    def __init__(self, app: Any, token: str | None) -> None:
        super().__init__(app)
        self.token = token
        self.session = _session(token) if token else None

    async def dispatch(
        self, request: Request, call_next: Callable[[Request], Awaitable[Response]]
    ) -> Response:
        if request.method not in {"GET", "HEAD"}:
            return PlainTextResponse("read-only: GET only\n", status_code=405, headers={"allow": "GET, HEAD"})
        if self.token is None or self.session is None:
            host = urlsplit("//" + request.headers.get("host", "")).hostname or ""
            if not is_loopback(host):
                return PlainTextResponse(f"unknown host {host!r}\n", status_code=421)
            return await call_next(request)
        given = request.query_params.get("token")
        if given is not None and hmac.compare_digest(given.encode(), self.token.encode()):
            rest = urlencode([(k, v) for k, v in request.query_params.multi_items() if k != "token"])
            response = RedirectResponse(request.url.path + (f"?{rest}" if rest else ""), status_code=303)
            response.set_cookie(
                _COOKIE, self.session, httponly=True, samesite="strict", secure=request.url.scheme == "https"
            )
            return response
        bearer = request.headers.get("authorization", "").removeprefix("Bearer ").strip()
        cookie = request.cookies.get(_COOKIE, "")
        if hmac.compare_digest(bearer.encode(), self.token.encode()) or hmac.compare_digest(
            cookie.encode(), self.session.encode()
        ):
            return await call_next(request)
        return PlainTextResponse(
            "this synclog needs its access token: open the link with ?token=… once, "
            "or send Authorization: Bearer …\n",
            status_code=401,
        )


def _session(token: str) -> str:
    """The cookie a token gives: derived from it, so the cookie is not the token itself."""
    return hmac.new(token.encode(), b"synclog serve session", hashlib.sha256).hexdigest()


__all__ = ["DOWNLOAD_LIMIT", "PAGE_SIZE", "TOKEN_ENV", "Viewer", "create_app", "is_loopback"]
