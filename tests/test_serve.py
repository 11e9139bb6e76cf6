"""`synclog serve` as a person uses it: the demo's syncs, runs and records in headless Chromium.

The browser is Debian's `chromium` driven through its `chromium-driver` (`scripts/system-deps.sh`
installs both); without them the browser tests skip with the reason. Screenshots of each page go
to a temporary folder, or to `$SYNCLOG_SCREENSHOTS` (the docs site's come from
`SYNCLOG_SCREENSHOTS=docs/screenshots`).
"""

from __future__ import annotations

import csv
import os
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from pyspark.sql import SparkSession

from synclog.cli.demo import demo_config
from synclog.demo.simulator import SYNCS, history, records
from synclog.writer import SyncLog
from synclog_testing.factories import RECORD_DDL, make_run, record_rows

SCALE = 0.05
HOSTILE_SYNC = 9876
HOSTILE_ID = "hostile@example.com"
HOSTILE_PAYLOAD = '{"email": "<script>document.title = \'pwned\'</script>", "plan": "<b>pro</b>"}'
HOSTILE_MESSAGE = "<img src=x onerror=\"document.title = 'pwned'\"> 400 Bad Request"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@dataclass
class Server:
    url: str
    process: subprocess.Popen[str]

    def stop(self) -> str:
        self.process.terminate()
        try:
            _out, err = self.process.communicate(timeout=30)
        except subprocess.TimeoutExpired:
            self.process.kill()
            _out, err = self.process.communicate()
        return err


def start_serve(*args: str) -> Server:
    """`synclog serve ARGS` on a free port, once it answers."""
    port = free_port()
    process = subprocess.Popen(
        [sys.executable, "-m", "synclog", "serve", "--port", str(port), *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise AssertionError(f"synclog serve exited: {process.communicate()}")
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=1):
                return Server(f"http://127.0.0.1:{port}", process)
        except OSError:
            time.sleep(0.2)
    process.kill()
    raise AssertionError(f"synclog serve did not answer: {process.communicate()}")


@pytest.fixture(scope="module")
def demo_db(tmp_path_factory: pytest.TempPathFactory, spark: SparkSession) -> Path:
    """The demo's last two runs of each sync at a small scale (as `synclog demo` writes them, in
    every layout DuckDB holds), plus a sync whose records hold markup (untrusted text)."""
    db = tmp_path_factory.mktemp("serve") / "demo.duckdb"
    with SyncLog.open(f"duckdb:///{db}", spark=spark) as log:
        log.config = demo_config(log.config, log.connector.capabilities.layouts)
        for sim in history(datetime.now(UTC).replace(microsecond=0), SCALE)[-2 * len(SYNCS) :]:
            log.write_run(sim.run, records(spark, sim, SCALE))
        run = make_run(sync_id=HOSTILE_SYNC, sync_run_id=1, started_at=datetime.now(UTC) - timedelta(hours=1))
        rows = record_rows(run, count=10, batches=1)
        rows[4] = (HOSTILE_ID, "upsert", "rejected", HOSTILE_MESSAGE, HOSTILE_PAYLOAD, *rows[4][5:])
        log.write_run(run, spark.createDataFrame(rows, RECORD_DDL))
    return db


@pytest.fixture(scope="module")
def server(demo_db: Path) -> Iterator[Server]:
    served = start_serve("--target", f"duckdb:///{demo_db}")
    yield served
    served.stop()


def by_css(driver: Any, selector: str) -> list[Any]:
    from selenium.webdriver.common.by import By

    return list(driver.find_elements(By.CSS_SELECTOR, selector))


def link(driver: Any, text: str) -> Any:
    from selenium.webdriver.common.by import By

    return driver.find_element(By.LINK_TEXT, text)


def cells(driver: Any, column: int) -> list[str]:
    """The texts of one column of the records (or runs) table."""
    return [row.find_elements("css selector", "td")[column].text for row in by_css(driver, "tbody tr")]


def search(driver: Any, identifier: str) -> None:
    """Type `identifier` in the search box, submit, and wait for the page that answers it."""
    from selenium.webdriver.support.ui import WebDriverWait

    driver.find_element("id", "search").send_keys(identifier)
    driver.find_element("id", "search-button").click()
    WebDriverWait(driver, 30).until(
        lambda d: "search=" in d.current_url and d.execute_script("return document.readyState") == "complete"
    )


def wait_for_file(folder: Path, suffix: str) -> Path:
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        done = [p for p in folder.glob(f"*{suffix}") if not p.name.endswith(".crdownload")]
        if done:
            return done[0]
        time.sleep(0.2)
    raise AssertionError(f"no {suffix} download in {folder}: {list(folder.iterdir())}")


def test_browse_filter_search_and_download(server: Server, browser: Any, screenshots: Path) -> None:
    browser.get(server.url + "/")
    assert browser.title == "Syncs · synclog"
    synced = [a.text for a in by_css(browser, "#syncs a")]
    assert {"sync 1234", "sync 2345", "sync 3456", "sync 4567", f"sync {HOSTILE_SYNC}"} <= set(synced)
    browser.save_screenshot(str(screenshots / "syncs.png"))

    link(browser, "sync 1234").click()
    assert browser.find_element("css selector", "h1").text.startswith("Sync 1234")
    runs = cells(browser, 0)
    assert runs and runs[0] == "run 5678", runs  # newest first
    assert len(by_css(browser, "#chart rect.succeeded")) == len(runs)
    browser.save_screenshot(str(screenshots / "runs.png"))

    with_rejections = [  # the rejected column links to the rejected records when there are some
        row
        for row in by_css(browser, "#runs tbody tr")
        if row.find_elements("css selector", "td")[6].find_elements("css selector", "a")
    ]
    assert with_rejections, "no run of sync 1234 has rejected records"
    chosen = with_rejections[0].find_elements("css selector", "td a")[0]
    run_id = chosen.text.removeprefix("run ")
    chosen.click()
    rejected_link = next(a for a in by_css(browser, "#filters a") if a.text.startswith("rejected ("))
    expected = int(rejected_link.text.removeprefix("rejected (").rstrip(")").replace(",", ""))
    assert expected > 0
    rejected_link.click()
    statuses = cells(browser, 2)
    assert statuses == ["rejected"] * min(expected, 50)
    messages = [m.text for m in by_css(browser, "#records .message")]
    assert len(messages) == len(statuses) and all(messages)
    browser.save_screenshot(str(screenshots / "records.png"))

    by_css(browser, "#download-csv")[0].click()
    downloaded = list(csv.DictReader(wait_for_file(browser.downloads, ".csv").open(encoding="utf-8")))
    assert len(downloaded) == expected
    assert {row["status"] for row in downloaded} == {"rejected"}
    assert {row["sync_run_id"] for row in downloaded} == {run_id}

    someone = cells(browser, 0)[-1]
    search(browser, someone)
    assert cells(browser, 0) == [someone]
    assert cells(browser, 2) == ["rejected"]
    payload = by_css(browser, "pre.payload")[0].text  # open: a search shows the payload
    assert someone in payload and '"email"' in payload

    by_css(browser, "#download-jsonl")[0].click()
    lines = wait_for_file(browser.downloads, ".jsonl").read_text(encoding="utf-8").splitlines()
    assert len(lines) == 1 and someone in lines[0]


def test_markup_in_a_payload_or_an_error_renders_as_text(server: Server, browser: Any) -> None:
    browser.get(server.url + "/")
    link(browser, f"sync {HOSTILE_SYNC}").click()
    link(browser, "run 1").click()
    search(browser, HOSTILE_ID)
    assert cells(browser, 0) == [HOSTILE_ID]
    assert "<script>document.title = 'pwned'</script>" in by_css(browser, "pre.payload")[0].text
    assert "<b>pro</b>" in by_css(browser, "pre.payload")[0].text
    assert by_css(browser, "#records .message")[0].text == HOSTILE_MESSAGE
    assert not by_css(browser, "main script, main img, main b")
    assert browser.title == "Run 1 · synclog"  # no script ran


def get(url: str, headers: dict[str, str] | None = None) -> tuple[int, dict[str, str], str]:
    """A GET that follows no redirect: status, headers, body."""

    class NoRedirect(urllib.request.HTTPRedirectHandler):
        def redirect_request(self, *args: Any, **kwargs: Any) -> None:
            return None

    opener = urllib.request.build_opener(NoRedirect)
    try:
        with opener.open(urllib.request.Request(url, headers=headers or {}), timeout=30) as response:
            return response.status, dict(response.headers), response.read().decode()
    except urllib.error.HTTPError as exc:
        return exc.code, dict(exc.headers), exc.read().decode()


def test_pages_are_read_only_and_escape_everything(server: Server) -> None:
    status, headers, body = get(f"{server.url}/syncs/{HOSTILE_SYNC}/runs/1?status=rejected")
    assert status == 200
    assert "&lt;script&gt;document.title" in body and "<script>" not in body
    assert "script-src" not in headers["content-security-policy"]  # default-src 'none': no script runs
    assert "default-src 'none'" in headers["content-security-policy"]
    request = urllib.request.Request(server.url + "/", method="POST")
    with pytest.raises(urllib.error.HTTPError) as refused:
        urllib.request.urlopen(request, timeout=30)
    assert refused.value.code == 405
    assert get(server.url + "/", {"Host": "attacker.example"})[0] == 421  # a rebound name is refused
    assert get(f"{server.url}/syncs/1234/runs/5678?status=lost")[0] == 400
    assert get(f"{server.url}/syncs/1234/runs/1")[0] == 404


def test_a_token_guards_every_page(demo_db: Path) -> None:
    served = start_serve("--target", f"duckdb:///{demo_db}", "--auth-token", "s3cret-token")
    try:
        assert get(served.url + "/")[0] == 401
        assert get(served.url + "/", {"Authorization": "Bearer wrong"})[0] == 401
        assert get(served.url + "/", {"Authorization": "Bearer s3cret-token"})[0] == 200
        status, headers, _ = get(served.url + "/syncs/1234?token=s3cret-token")
        assert status == 303 and headers["location"] == "/syncs/1234"
        cookie = headers["set-cookie"].split(";")[0]
        assert "s3cret-token" not in cookie and "HttpOnly" in headers["set-cookie"]
        assert get(served.url + "/syncs/1234", {"Cookie": cookie})[0] == 200
    finally:
        served.stop()


def test_listening_beyond_loopback_needs_a_token() -> None:
    done = subprocess.run(
        [sys.executable, "-m", "synclog", "serve", "--host", "0.0.0.0", "--port", str(free_port())],
        capture_output=True,
        text=True,
        timeout=60,
        env={k: v for k, v in os.environ.items() if k != "SYNCLOG_SERVE_TOKEN"},
    )
    assert done.returncode == 2
    assert "--host 0.0.0.0 is reachable from other machines: set SYNCLOG_SERVE_TOKEN" in done.stderr
