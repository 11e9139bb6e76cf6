"""The Python snippets of README.md and docs/plugins.md run as written, in order, one namespace
per document (a snippet may use what an earlier one defined)."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest
from pyspark.sql import SparkSession

from synclog.plugin_api import LAYOUT_METHODS, TargetType
from synclog.testing.factories import make_records, make_run, record_rows

ROOT = Path(__file__).resolve().parent.parent
_BLOCK = re.compile(r"^```python\n(.*?)^```", re.S | re.M)


def snippets(document: str) -> list[str]:
    return _BLOCK.findall((ROOT / document).read_text())


def run_all(document: str, namespace: dict[str, Any]) -> dict[str, Any]:
    for number, code in enumerate(snippets(document), 1):
        exec(compile(code, f"{document} python snippet {number}", "exec"), namespace)
    return namespace


def test_the_plugin_guide_snippets_run() -> None:
    namespace = run_all("docs/plugins.md", {"__name__": "guide"})
    registered: list[TargetType] = []
    namespace["synclog_register_targets"](registered.append)
    assert [t.name for t in registered] == ["mywarehouse"]
    assert namespace["SYNCLOG_PLUGIN_API"] == 1
    assert "TestMyWarehouse" in namespace and "synclog_target_url" in namespace
    assert "read_rows" in (ROOT / "docs/plugins.md").read_text()
    assert all(m in (ROOT / "docs/plugins.md").read_text() for ms in LAYOUT_METHODS.values() for m in ms)


def test_the_readme_snippets_run(
    tmp_path: Path, spark: SparkSession, monkeypatch: pytest.MonkeyPatch
) -> None:
    """With what the README's API snippets name as their inputs: run.json, a sync engine's record
    results as Spark frames (batch_df, next_batch_df, records_df) and the mask key's variable."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("SYNCLOG_MASK_KEY", "k" * 32)
    run = make_run(sync_id=1234)
    (tmp_path / "run.json").write_text(json.dumps(run.to_dict(), default=str))
    rows = record_rows(run)
    namespace = {
        "__name__": "readme",
        "batch_df": make_records(spark, [r for r in rows if r[5] == 0]),
        "next_batch_df": make_records(spark, [r for r in rows if r[5] == 1]),
        "records_df": make_records(spark, rows),
    }
    run_all("README.md", namespace)
    assert namespace["rejected"].num_rows > 0
    assert namespace["history"].column("sync_run_id").to_pylist() == [run.sync_run_id]
