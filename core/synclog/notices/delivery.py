"""Where notices go (a webhook, a Slack-compatible incoming webhook) and how they get there.

Every delivery runs in the background, on one thread per destination (so a destination gets its
notices in order): tried `retries` more times after a failure, each try bounded by
`timeout_seconds`, then given up with one warning line. Nothing here raises into the sync.
A notice carries counts, rule names and thresholds, never a record's values; URLs are shown
masked (`https://hooks.example.com/…`) since a webhook's path is often its secret.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import os
import queue
import threading
import time
import urllib.request
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from typing import Any
from urllib.parse import urlsplit

from synclog.errors import first_line
from synclog.notices.lineage import LineageSettings

SIGNATURE_HEADER = "X-Synclog-Signature"
"""`sha256=<hex HMAC-SHA256 of the body>`, keyed with the secret of the webhook's `secret_env`."""
BACKOFF_SECONDS = 0.5
"""Wait before the first retry; doubled before each next one."""

Warn = Callable[[str], None]


@dataclass(frozen=True)
class Endpoint:
    """A webhook (`kind = "webhook"`) or Slack-compatible incoming webhook (`"slack"`)."""

    kind: str
    url: str | None = None
    url_env: str | None = None
    """The variable holding the URL instead (a Slack webhook's URL is its secret)."""
    secret_env: str | None = None
    """The variable holding the HMAC key that signs a webhook's body."""

    def resolved_url(self) -> str | None:
        return self.url or (os.environ.get(self.url_env) if self.url_env else None)


@dataclass(frozen=True)
class NoticeSettings:
    """The `[notices]` table: destinations, OpenLineage, and how hard deliveries try."""

    endpoints: tuple[Endpoint, ...] = ()
    lineage: LineageSettings | None = None
    """`[notices.openlineage]`; None: no OpenLineage events."""
    timeout_seconds: float = 5.0
    retries: int = 2

    @property
    def patience(self) -> float:
        """Seconds one delivery may take at most, every try and wait included."""
        tries = self.retries + 1
        return tries * self.timeout_seconds + BACKOFF_SECONDS * (2 ** (tries - 1) - 1)


@dataclass(frozen=True)
class Notice:
    """A rule firing (`state = "firing"`) or holding again (`"resolved"`) for a sync."""

    state: str
    sync_id: int
    sync_run_id: int | None
    rule: str
    measured: float | None
    threshold: float
    summary: str
    at: datetime

    def line(self) -> str:
        return f"{'resolved' if self.state == 'resolved' else 'firing'} {self.rule}: {self.summary}"


def webhook_body(notice: Notice) -> dict[str, Any]:
    """The JSON a webhook receives."""
    return {
        "source": "synclog",
        "state": notice.state,
        "sync_id": notice.sync_id,
        "sync_run_id": notice.sync_run_id,
        "rule": notice.rule,
        "measured": notice.measured,
        "threshold": notice.threshold,
        "summary": notice.line(),
        "at": notice.at.isoformat(),
    }


def slack_body(notice: Notice) -> dict[str, Any]:
    """A Slack incoming webhook's message: `text` (the fallback) and the same in blocks."""
    mark = ":white_check_mark:" if notice.state == "resolved" else ":rotating_light:"
    measured = "n/a" if notice.measured is None else f"{notice.measured:g}"
    detail = f"rule `{notice.rule}` · measured {measured} · threshold {notice.threshold:g}"
    return {
        "text": f"synclog {notice.line()}",
        "blocks": [
            {"type": "section", "text": {"type": "mrkdwn", "text": f"{mark} *synclog* {notice.line()}"}},
            {"type": "context", "elements": [{"type": "mrkdwn", "text": detail}]},
        ],
    }


def signature(secret: str, body: bytes) -> str:
    """The value of `SIGNATURE_HEADER` for `body`."""
    return "sha256=" + hmac.new(secret.encode(), body, hashlib.sha256).hexdigest()


def masked(url: str) -> str:
    """`url` without credentials, path or query: `scheme://host:port/…`."""
    parts = urlsplit(url)
    host = parts.hostname or ""
    shown = f"[{host}]" if ":" in host else host
    port = f":{parts.port}" if parts.port else ""
    return f"{parts.scheme}://{shown}{port}/…"


def post_json(url: str, body: dict[str, Any], timeout: float, secret: str | None = None) -> None:
    """POST `body` as JSON; raises on a connection failure, a timeout or a status of 400 and above."""
    data = json.dumps(body).encode()
    headers = {"Content-Type": "application/json", "User-Agent": "synclog"}
    if secret:
        headers[SIGNATURE_HEADER] = signature(secret, data)
    request = urllib.request.Request(url, data=data, headers=headers, method="POST")
    with urllib.request.urlopen(request, timeout=timeout) as response:
        response.read()


class Courier:
    """One destination's background deliveries, in order, each tried a bounded number of times."""

    def __init__(self, where: str, warn: Warn, timeout: float, retries: int) -> None:
        self.where = where
        """The destination as shown in warnings (masked)."""
        self.warn = warn
        self.timeout = timeout
        self.retries = retries
        self._queue: queue.Queue[tuple[str, Callable[[float], None]]] = queue.Queue()
        self._worker: threading.Thread | None = None
        self._lock = threading.Lock()

    def send(self, what: str, deliver: Callable[[float], None]) -> None:
        """Deliver in the background: `deliver(timeout)` raises when a try failed."""
        with self._lock:
            if self._worker is None:
                self._worker = threading.Thread(target=self._work, name="synclog-notices", daemon=True)
                self._worker.start()
        self._queue.put((what, deliver))

    def wait(self, deadline: float) -> None:
        """Wait until `deadline` (`time.monotonic()`) at most for what was sent; warn about what is
        still undelivered then."""
        with self._queue.all_tasks_done:
            while self._queue.unfinished_tasks and (left := deadline - time.monotonic()) > 0:
                self._queue.all_tasks_done.wait(left)
            left_over = self._queue.unfinished_tasks
        if left_over:
            self.warn(f"warning: {left_over} notice(s) to {self.where} not delivered in time; given up")

    def _work(self) -> None:
        while True:
            what, deliver = self._queue.get()
            try:
                self._try(what, deliver)
            finally:
                self._queue.task_done()

    def _try(self, what: str, deliver: Callable[[float], None]) -> None:
        for attempt in range(self.retries + 1):
            if attempt:
                time.sleep(BACKOFF_SECONDS * 2 ** (attempt - 1))
            try:
                deliver(self.timeout)
                return
            except Exception as exc:  # any failure of a delivery is the destination's, never the sync's
                error = exc
        self.warn(
            f"warning: {what} to {self.where} not delivered after {self.retries + 1} tries "
            f"({type(error).__name__}: {_masked_error(error)})"
        )


def _masked_error(exc: BaseException) -> str:
    """The error's first line, without any URL in it (it could hold a token)."""
    words = first_line(exc).split()
    return " ".join(masked(w) if "://" in w else w for w in words)
