"""Shared fixtures: one small demo (read by the command-line and the Hightouch-layout tests), and
for the browser tests (`synclog serve`'s pages, the docs site) headless Chromium and where its
screenshots go."""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from pyspark.sql import SparkSession

from synclog.cli.main import main

DEMO_SCALE = 0.02
"""The shared demo's `--scale`: its five syncs' runs, a few hundred records in all."""


@pytest.fixture(scope="session")
def demo_folder(tmp_path_factory: pytest.TempPathFactory, spark: SparkSession) -> Path:
    """`synclog demo` at DEMO_SCALE into `demo.duckdb` here, its inputs in `inputs/`, its storage
    in `storage/`. Tests only read it, or write what leaves it as it was (a replayed run)."""
    folder = tmp_path_factory.mktemp("demo")
    config = folder / "synclog.toml"
    config.write_text(f'storage = "{folder / "storage"}"\n', encoding="utf-8")
    target = f"duckdb:///{folder / 'demo.duckdb'}"
    args = ["demo", "--scale", str(DEMO_SCALE), "--target", target, "--emit-inputs", str(folder / "inputs")]
    assert main(["--config", str(config), *args]) == 0
    return folder


@pytest.fixture(scope="module")
def screenshots(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """`$SYNCLOG_SCREENSHOTS` (docs/screenshots: the docs site's), else a temporary folder."""
    folder = Path(os.environ.get("SYNCLOG_SCREENSHOTS") or tmp_path_factory.mktemp("screenshots"))
    folder.mkdir(parents=True, exist_ok=True)
    return folder


@pytest.fixture(scope="module")
def browser(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    """Headless Chromium (Debian's), downloading into a folder of its own."""
    chromium = shutil.which("chromium") or shutil.which("chromium-browser")
    driver_path = shutil.which("chromedriver")
    if chromium is None or driver_path is None:
        pytest.skip("needs Debian's chromium and chromium-driver (scripts/system-deps.sh installs them)")
    webdriver = pytest.importorskip("selenium.webdriver", reason="needs selenium (the dev extra)")
    from selenium.webdriver.chrome.service import Service

    downloads = tmp_path_factory.mktemp("downloads")
    options = webdriver.ChromeOptions()
    options.binary_location = chromium
    for argument in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage"):
        options.add_argument(argument)
    options.add_argument("--window-size=1280,900")
    options.add_experimental_option(
        "prefs", {"download.default_directory": str(downloads), "download.prompt_for_download": False}
    )
    driver = webdriver.Chrome(service=Service(driver_path), options=options)
    driver.execute_cdp_cmd("Page.setDownloadBehavior", {"behavior": "allow", "downloadPath": str(downloads)})
    driver.downloads = downloads
    try:
        yield driver
    finally:
        driver.quit()
