"""The docs site: its generated pages are current, it builds with `mkdocs build --strict`, and a
reader sees in headless Chromium what its start page, capability matrix and a warehouse page say.

Screenshots go to `$SYNCLOG_SCREENSHOTS` (docs/screenshots: `site-*.png`), else a temporary folder.
"""

from __future__ import annotations

import functools
import http.server
import os
import subprocess
import sys
import threading
from collections.abc import Iterator
from dataclasses import fields
from pathlib import Path
from typing import Any

import pytest

from synclog import config_keys
from synclog.docs_gen import PAGES, stale, write
from synclog.notices.rules import AlertRules
from synclog.plugins.manager import registry

ROOT = Path(__file__).resolve().parent.parent


def test_no_generated_page_is_stale() -> None:
    assert list(stale(ROOT / "docs")) == [], "run: python -m synclog.docs_gen"


def test_a_page_edited_by_hand_is_stale(tmp_path: Path) -> None:
    assert sorted(write(tmp_path)) == sorted(PAGES)
    assert list(stale(tmp_path)) == []
    page = tmp_path / "reference/capabilities.md"
    page.write_text(page.read_text().replace("json_type", "json_kind"))
    assert list(stale(tmp_path)) == ["reference/capabilities.md"]


def test_the_home_page_names_every_plugin() -> None:
    home = (ROOT / "docs/index.md").read_text()
    plugins = sorted(p.parent.name for p in (ROOT / "plugins").glob("*/pyproject.toml"))
    assert len(plugins) == 5
    assert [p for p in plugins if p not in home.lower()] == []
    assert all((ROOT / "docs/warehouses" / f"{p}.md").exists() for p in plugins)
    assert "(warehouses/index.md)" in home


def test_the_alert_keys_are_the_alert_rules() -> None:
    assert config_keys.names("alerts") == {f.name for f in fields(AlertRules)}


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """The site as `mkdocs build --strict` builds it, served on 127.0.0.1."""
    folder = tmp_path_factory.mktemp("site")
    built = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "--quiet", "--site-dir", str(folder)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        env={**os.environ, "NO_MKDOCS_2_WARNING": "1"},
    )
    assert built.returncode == 0, built.stderr
    handler = functools.partial(_QuietHandler, directory=str(folder))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()


class _QuietHandler(http.server.SimpleHTTPRequestHandler):
    def log_message(self, format: str, *args: Any) -> None:
        pass


def _open(browser: Any, url: str, screenshot: Path) -> str:
    """Open `url`, save its screenshot, and return its text; no machine path shows on it."""
    browser.get(url)
    browser.save_screenshot(str(screenshot))
    source = browser.page_source
    assert str(ROOT) not in source and str(Path.home()) + "/" not in source
    return str(browser.find_element("tag name", "article").text)


def test_a_reader_finds_the_start_page_the_matrix_and_a_warehouse(
    site: str, browser: Any, screenshots: Path
) -> None:
    start = _open(browser, f"{site}/", screenshots / "site-start.png")
    assert "make demo" in start and "make test" in start
    assert "Getting started" in browser.find_element("css selector", "nav.md-nav--primary").text

    _open(browser, f"{site}/reference/capabilities/", screenshots / "site-capabilities.png")
    types = registry().types()
    matrix = browser.find_element("css selector", "article table")
    head = [th.text for th in matrix.find_elements("css selector", "th")]
    assert head == ["capability", *[t.name for t in types]]
    rows = {
        cells[0]: cells[1:]
        for row in matrix.find_elements("css selector", "tbody tr")
        if (cells := [td.text for td in row.find_elements("css selector", "td")])
    }
    assert rows["json_type"] == [t.capabilities.json_type for t in types]

    snowflake = _open(browser, f"{site}/warehouses/snowflake/", screenshots / "site-snowflake.png")
    assert "CENSUS.CENSUS.SYNC_LOG" in snowflake and "COPY INTO" in snowflake
    assert browser.find_element("css selector", "a.md-nav__link--active").text == "Snowflake"
