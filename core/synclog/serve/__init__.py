"""`synclog serve`: Sync Tracking in the browser, read-only, over any target and layout.

Server-rendered pages (Starlette, Jinja2 with autoescaping, uvicorn), no JavaScript: the syncs a
target holds, a sync's runs with a chart of succeeded and rejected records per run, and a run's
records with the status filter, identifier search, paging and a CSV / JSON lines download of the
selection. It reads through `synclog.tracking`, so it never starts Spark.

Install it with the `serve` extra: `pip install 'synclog[serve]'`.
"""

from __future__ import annotations

from synclog.serve.app import DOWNLOAD_LIMIT, PAGE_SIZE, TOKEN_ENV, Viewer, create_app, is_loopback

__all__ = ["DOWNLOAD_LIMIT", "PAGE_SIZE", "TOKEN_ENV", "Viewer", "create_app", "is_loopback"]
