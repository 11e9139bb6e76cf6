"""Every code snippet of the docs site (docs/, with the files its pages include) and of README.md
is checked as written, one namespace per page (a snippet may use what an earlier one defined):

- python runs;
- SQL marked `-- duckdb` runs on a DuckDB database holding every census and hightouch table
  (three-part names with the catalog `census`, as on Snowflake and Databricks, run without it);
  SQL for another warehouse (`-- redshift`, `-- snowflake`, …, the lake's files, the dbt marts)
  parses in that warehouse's dialect;
- TOML parses, and a `synclog.toml` goes through the configuration model;
- `synclog …` and `make …` lines of shell snippets are parsed by the argument parser / found in
  the Makefile; JSON and YAML parse. `text` blocks are output, not snippets.
"""

from __future__ import annotations

import json
import re
import shlex
import tomllib
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import sqlglot
import yaml
from pyspark.sql import SparkSession

from synclog import config_keys
from synclog.cli.main import build_parser
from synclog.config import Config
from synclog.layouts.registry import LAYOUTS
from synclog.plugin_api import LAYOUT_METHODS, TargetType
from synclog.plugins.manager import registry
from synclog.urls import TargetURL
from synclog_testing import seed_queries
from synclog_testing.factories import make_records, make_run, record_rows

ROOT = Path(__file__).resolve().parent.parent
_BLOCK = re.compile(r"^```(\w*)\n(.*?)^```", re.S | re.M)
_INCLUDE = re.compile(r'^--8<-- "([^":]+)(?::(\w+))?"$', re.M)
_MARKER = re.compile(r"^.*--8<-- \[(start|end):\w+\].*\n?", re.M)
SQL_DIALECTS = {
    "snowflake": "snowflake",
    "bigquery": "bigquery",
    "redshift": "redshift",
    "postgres": "postgres",
    "databricks": "databricks",
    "lake": "duckdb",
    "dbt": "duckdb",
}
"""What a SQL snippet's first comment may name besides duckdb, and the dialect it parses in."""
_CATALOG = re.compile(r"\bcensus\.(census|hightouch_audit)\.", re.I)
"""The catalog of a three-part name (`CENSUS.CENSUS.SYNC_LOG`), which the DuckDB file has not."""
INCLUDED_ONLY = {"docs/plugins.md"}
"""Sources the site shows only through its pages' includes."""


def page_text(document: str) -> str:
    """A page as the site renders it: its includes (`--8<-- "file[:section]"`) expanded."""

    def include(match: re.Match[str]) -> str:
        text = (ROOT / match[1]).read_text()
        if match[2]:
            text = text.split(f"[start:{match[2]}]", 1)[1].split(f"[end:{match[2]}]", 1)[0]
            text = text.split("\n", 1)[1].rsplit("\n", 1)[0]
        return _MARKER.sub("", text)

    return _INCLUDE.sub(include, (ROOT / document).read_text())


def snippets(document: str, language: str) -> list[str]:
    return [code for lang, code in _BLOCK.findall(page_text(document)) if lang == language]


def pages() -> list[str]:
    site = sorted(str(p.relative_to(ROOT)) for p in (ROOT / "docs").rglob("*.md"))
    return ["README.md", *(p for p in site if p not in INCLUDED_ONLY)]


def run_all(document: str, namespace: dict[str, Any]) -> dict[str, Any]:
    for number, code in enumerate(snippets(document, "python"), 1):
        exec(compile(code, f"{document} python snippet {number}", "exec"), namespace)
    return namespace


@pytest.fixture
def engine_inputs(tmp_path: Path, spark: SparkSession, monkeypatch: pytest.MonkeyPatch) -> dict[str, Any]:
    """What the API snippets name as their inputs: run.json, a sync engine's record results as
    Spark frames (batch_df, next_batch_df, records_df) and the mask key's variable."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("SYNCLOG_MASK_KEY", "k" * 32)
    run = make_run(sync_id=1234)
    (tmp_path / "run.json").write_text(json.dumps(run.to_dict(), default=str))
    rows = record_rows(run)
    return {
        "batch_df": make_records(spark, [r for r in rows if r[5] == 0]),
        "next_batch_df": make_records(spark, [r for r in rows if r[5] == 1]),
        "records_df": make_records(spark, rows),
        "run": run,
    }


@pytest.fixture(scope="module")
def census_db(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    """An empty DuckDB database with every census and hightouch table and view."""
    path = tmp_path_factory.mktemp("snippets") / "logs.duckdb"
    target = registry().open(TargetURL.parse(f"duckdb:///{path}"))
    try:
        target.ensure([*LAYOUTS["census"].tables, *LAYOUTS["hightouch"].tables])
        yield target
    finally:
        target.close()


@pytest.mark.parametrize(
    "document", [p for p in pages() if snippets(p, "python") and p != "docs/engines/index.md"]
)
def test_every_python_snippet_runs(document: str, engine_inputs: dict[str, Any]) -> None:
    namespace = run_all(document, {"__name__": "snippets", **engine_inputs})
    assert namespace["__name__"] == "snippets"


def test_the_engine_page_snippets_log_what_they_say(engine_inputs: dict[str, Any]) -> None:
    namespace = run_all("docs/engines/index.md", {"__name__": "engines", **engine_inputs})
    assert namespace["rejected"].num_rows > 0
    assert namespace["history"].column("sync_run_id").to_pylist() == [engine_inputs["run"].sync_run_id]
    assert namespace["first"].wait().statuses == {"succeeded": 1, "rejected": 1}
    assert namespace["result"].statuses == {"succeeded": 1}  # the recommended set-up's run


def test_the_plugin_guide_snippets_run() -> None:
    namespace = run_all("docs/plugins.md", {"__name__": "guide"})
    registered: list[TargetType] = []
    namespace["synclog_register_targets"](registered.append)
    assert [t.name for t in registered] == ["mywarehouse"]
    assert namespace["SYNCLOG_PLUGIN_API"] == 1
    assert "TestMyWarehouse" in namespace and "synclog_target_url" in namespace
    assert "read_rows" in (ROOT / "docs/plugins.md").read_text()
    assert all(m in (ROOT / "docs/plugins.md").read_text() for ms in LAYOUT_METHODS.values() for m in ms)


@pytest.mark.parametrize("document", pages())
def test_every_sql_snippet_runs_or_parses(document: str, census_db: Any) -> None:
    for code in snippets(document, "sql"):
        first = code.split("\n", 1)[0]
        said = re.match(r"-- (\w+)", first)
        assert said, f"{document}: a SQL snippet must say where it runs on its first line: {first!r}"
        if said[1] == "duckdb":
            census_db.query(_CATALOG.sub(r"\1.", code).strip().rstrip(";"))
        else:
            assert said[1] in SQL_DIALECTS, f"{document}: unknown warehouse {said[1]!r} in {first!r}"
            assert all(sqlglot.parse(code, read=SQL_DIALECTS[said[1]]))


def test_the_seeds_page_holds_the_seeds_verbatim() -> None:
    page = page_text("docs/analysts/seeds.md")
    for name in ("SEED_002_ERRORS", "SEED_002_ENTER_EXIT", "SEED_002_CURRENT"):
        assert getattr(seed_queries, name) in page, name


@pytest.mark.parametrize("document", pages())
def test_every_config_and_data_snippet_parses(document: str) -> None:
    for code in snippets(document, "toml"):
        data = tomllib.loads(code)
        if set(data) <= config_keys.names(""):
            Config.from_dict(data, source=f"{document} toml snippet")
    for code in snippets(document, "json"):
        json.loads(code)
    for code in snippets(document, "yaml"):
        yaml.safe_load(code)


@pytest.mark.parametrize("document", pages())
def test_every_command_parses(document: str) -> None:
    make_targets = set(re.findall(r"^([\w-]+):", (ROOT / "Makefile").read_text(), re.M))
    for code in snippets(document, "sh"):
        for line in code.splitlines():
            words = shlex.split(line, comments=True)
            if words[:1] == ["synclog"]:
                build_parser().parse_args(words[1:])
            elif words[:1] == ["make"]:
                assert set(words[1:]) <= make_targets, f"{document}: {line!r}"
