"""The destination: a contacts API on 127.0.0.1 that takes batches of upserts and deletes.

It answers each record on its own, as CRM bulk APIs do: accepted, or refused with an error
code and a message that echoes the value (`INVALID_EMAIL: the email 'x' is not valid`).
"""

from __future__ import annotations

import json
import re
import threading
import time
from collections.abc import Iterable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from types import TracebackType
from typing import Any

from synclog_example_engine.source import PLANS

EMAIL = re.compile(r"^[\w.+-]+@[\w-]+\.[\w.]+$")


class ContactsAPI:
    """`POST /contacts/upsert {"records": [...]}` and `POST /contacts/delete {"emails": [...]}`.

    Both answer `{"results": [{"email": ..., "error": null | "CODE: message"}, ...]}` in the
    order asked. `answers` keeps every answer given, by email, for checking what was logged.
    `failing_from`, when set, makes that request and every later one fail with HTTP 503.
    `answer_seconds` makes each answer take at least that long, as a remote API's does.

    >>> with ContactsAPI(existing={"a@example.com"}) as api:
    ...     api.url  # http://127.0.0.1:PORT
    """

    def __init__(
        self, existing: Iterable[str] = (), failing_from: int | None = None, answer_seconds: float = 0.0
    ) -> None:
        self.contacts: dict[str, dict[str, Any]] = {email: {"email": email} for email in existing}
        self.answers: dict[str, str | None] = {}
        self.requests = 0
        self.failing_from = failing_from
        self.answer_seconds = answer_seconds
        self._lock = threading.Lock()
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), _handler(self))
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    @property
    def url(self) -> str:
        host, port = self._server.server_address[:2]
        return f"http://{host}:{port}"

    def __enter__(self) -> ContactsAPI:
        self._thread.start()
        return self

    def __exit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self._server.shutdown()
        self._server.server_close()
        self._thread.join()

    def answer(self, path: str, body: dict[str, Any]) -> tuple[int, dict[str, Any]]:
        """The status and JSON answer to one request."""
        with self._lock:
            self.requests += 1
            if self.failing_from is not None and self.requests >= self.failing_from:
                return 503, {"error": "SERVICE_UNAVAILABLE: the contacts service is down for maintenance"}
            if path == "/contacts/upsert":
                results = [{"email": r.get("email"), "error": self._upsert(r)} for r in body["records"]]
            elif path == "/contacts/delete":
                results = [{"email": e, "error": self._delete(e)} for e in body["emails"]]
            else:
                return 404, {"error": f"NOT_FOUND: no endpoint {path}"}
            self.answers.update((r["email"], r["error"]) for r in results)
            return 200, {"results": results}

    def _upsert(self, record: dict[str, Any]) -> str | None:
        email, plan = record.get("email"), record.get("plan")
        if not isinstance(email, str) or not EMAIL.match(email):
            return f"INVALID_EMAIL: the email '{email}' is not valid"
        if plan not in PLANS:
            return f"INVALID_PLAN: '{plan}' is not one of {', '.join(PLANS)}"
        self.contacts[email] = dict(record)
        return None

    def _delete(self, email: str) -> str | None:
        if self.contacts.pop(email, None) is None:
            return f"CONTACT_NOT_FOUND: no contact has the email '{email}'"
        return None


def _handler(api: ContactsAPI) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            asked = time.monotonic()
            length = int(self.headers.get("Content-Length", 0))
            status, answer = api.answer(self.path, json.loads(self.rfile.read(length)))
            payload = json.dumps(answer).encode()
            time.sleep(max(0.0, asked + api.answer_seconds - time.monotonic()))
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(payload)))
            self.end_headers()
            self.wfile.write(payload)

        def log_message(self, format: str, *args: Any) -> None:
            """Quiet: the engine reports what happened."""

    return Handler
