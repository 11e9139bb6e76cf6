"""Plugins: built-ins and third-party targets load the same way, through entry points."""

from __future__ import annotations

import inspect
import re
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import replace
from pathlib import Path
from typing import Any

import pluggy
import pytest

from synclog import plugin_api as api
from synclog.capabilities import Capabilities, Schemas, Staging, SwapStrategy
from synclog.errors import ConfigError
from synclog.plugins import manager
from synclog.plugins.hookspecs import hookimpl
from synclog.targets.base import Target, TargetSettings, TargetType
from synclog.targets.connector import Connector
from synclog.targets.contract import check_target_class, missing_methods
from synclog.targets.duckdb import CAPABILITIES as DUCKDB
from synclog.targets.duckdb import TARGET_TYPE, DuckDBTarget
from synclog.targets.sql import SqlTarget
from synclog.targets.sql_client import DbApiClient
from synclog.targets.sql_dialect import SqlDialect
from synclog.targets.sql_loaders import FileLoader, PartitionExpirer, SchemaAttacher
from synclog.targets.swaps.partition_replace import PartitionReplacer
from synclog.urls import TargetURL


@contextmanager
def installed(site: Path, module: str, source: str) -> Iterator[None]:
    """Install a one-module plugin the way pip would: the module plus a dist-info with entry points."""
    dist = site / f"{module}-0.1.dist-info"
    dist.mkdir(parents=True)
    (site / f"{module}.py").write_text(source)
    name = module.replace("_", "-")
    (dist / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {name}\nVersion: 0.1\n")
    (dist / "entry_points.txt").write_text(f"[synclog]\n{module.split('_', 1)[1]} = {module}\n")
    sys.path.insert(0, str(site))
    manager.registry.cache_clear()
    try:
        yield
    finally:
        sys.path.remove(str(site))
        sys.modules.pop(module, None)
        manager.registry.cache_clear()


def test_a_plugin_built_for_another_api_is_refused_in_one_line(tmp_path: Path) -> None:
    source = "SYNCLOG_PLUGIN_API = 99\n"
    with (
        installed(tmp_path / "site", "synclog_future", source),
        pytest.raises(
            ConfigError,
            match=r"^plugin synclog_future \(synclog-future 0.1\) is built for synclog plugin API 99, "
            "this synclog has 1",
        ),
    ):
        manager.registry()


def test_a_plugin_that_declares_no_api_is_refused(tmp_path: Path) -> None:
    with (
        installed(tmp_path / "site", "synclog_old", '"""No SYNCLOG_PLUGIN_API."""\n'),
        pytest.raises(ConfigError, match=r"plugin synclog_old \(synclog-old 0.1\) does not declare"),
    ):
        manager.registry()


TEXT = Capabilities(json_type="TEXT")


class _NoReadBack(Target):
    """Everything but `read_rows`, which the hightouch layout calls."""

    def ensure(self, tables: object) -> None: ...
    def replace_rows(self, table: object, rows: object, keys: object) -> int: ...  # type: ignore[empty-body]
    def delete_expired(self, table: object, cutoffs: object) -> int: ...  # type: ignore[empty-body]
    def query(self, sql: str, params: object = ()) -> object: ...
    def existing_tables(self, tables: object) -> list[object]: ...  # type: ignore[empty-body]
    def close(self) -> None: ...


def test_a_target_lacking_what_its_layouts_call_is_refused_naming_the_methods() -> None:
    kind = TargetType("partial", ("partial",), TEXT, "a target without read_rows", _NoReadBack)
    with pytest.raises(
        ConfigError,
        match=r"target 'partial' .* census, hightouch layout\(s\) but does not implement read_rows$",
    ):
        manager.registry().register(kind)
    census_only = replace(TEXT, layouts=("census",))
    assert missing_methods(_NoReadBack, census_only) == []
    assert missing_methods(SqlTarget, census_only) == ["load_files"]
    dropping = replace(census_only, partition_drop=True)
    assert missing_methods(SqlTarget, dropping) == ["load_files", "drop_partitions"]
    tasks = replace(census_only, staging=Staging.TASKS)
    assert missing_methods(SqlTarget, tasks) == ["task_writer"]  # declared, whatever it overrides


def test_a_target_whose_capabilities_pick_no_swap_is_refused_at_registration() -> None:
    """Neither transactions, MERGE nor partition replace: refused when registered, in one line
    naming what is missing, before any table exists; partition replace asks for its hook."""
    stuck = replace(DUCKDB, transactions=False, merge=False)
    kind = TargetType("stuck", ("stuck",), stuck, "a warehouse that cannot replace rows", DuckDBTarget)
    with pytest.raises(
        ConfigError,
        match=r"^target 'stuck' \(synclog.targets.duckdb.DuckDBTarget\) declares no transactions, "
        r"no merge and no partition_replace, one of which picks how it replaces rows$",
    ):
        manager.registry().register(kind)
    assert "stuck" not in {t.name for t in manager.registry().types()}
    partitioned = replace(stuck, partition_replace=True)
    with pytest.raises(ConfigError, match=r"does not implement replace_partition$"):
        manager.registry().register(replace(kind, capabilities=partitioned))
    own = replace(stuck, swap=SwapStrategy.OWN)
    with pytest.raises(ConfigError, match=r"does not implement swap_statements$"):
        check_target_class("own-swap", DuckDBTarget, own)  # its own swap is declared, then required

    class OwnSwap(DuckDBTarget, api.OwnSwap):
        def swap_statements(self, table: object, relation: object, stage: object, keys: object) -> list[Any]:  # type: ignore[override]
            return []

    check_target_class("own-swap", OwnSwap, own)


@pytest.mark.parametrize(
    ("declared", "refused"),
    [
        ({"swap": SwapStrategy.MERGE}, r"declares swap = merge, which needs merge = yes$"),
        (
            {"swap": SwapStrategy.PARTITION_REPLACE},
            r"declares swap = partition-replace, which needs partition_replace = yes$",
        ),
        (
            {"transactions": False, "merge": True, "swap": SwapStrategy.DELETE_INSERT},
            r"declares swap = delete-insert, which needs transactions = yes$",
        ),
        (
            {"replays_statements": True, "swap": SwapStrategy.DELETE_INSERT},
            r"declares swap = delete-insert with replays_statements = yes: a replayed INSERT would add its ",
        ),
    ],
)
def test_a_swap_strategy_the_capabilities_cannot_run_is_refused_in_one_line(
    declared: dict[str, Any], refused: str
) -> None:
    """`swap` names a strategy; one the capabilities cannot run is refused when registered."""
    kind = TargetType("chosen", ("chosen",), replace(DUCKDB, **declared), "a chosen swap", DuckDBTarget)
    with pytest.raises(
        ConfigError, match=r"^target 'chosen' \(synclog.targets.duckdb.DuckDBTarget\) " + refused
    ):
        manager.registry().register(kind)


def test_the_swap_strategy_is_the_declared_one_else_the_first_that_applies() -> None:
    """Today's order by default: delete-insert (insert-missing where the client replays statements)
    with transactions, else MERGE, else partition replace; a declared one its capabilities allow
    replaces it."""
    assert DUCKDB.swap_strategy is SwapStrategy.DELETE_INSERT
    assert replace(DUCKDB, replays_statements=True).swap_strategy is SwapStrategy.INSERT_MISSING
    assert replace(DUCKDB, merge=True).swap_strategy is SwapStrategy.DELETE_INSERT
    assert replace(DUCKDB, transactions=False, merge=True).swap_strategy is SwapStrategy.MERGE
    partitioned = replace(DUCKDB, transactions=False, partition_replace=True)
    assert partitioned.swap_strategy is SwapStrategy.PARTITION_REPLACE
    chosen = replace(DUCKDB, merge=True, swap=SwapStrategy.MERGE)
    assert chosen.swap_strategy is SwapStrategy.MERGE and chosen.swap_refusal() is None
    assert dict(chosen.as_rows())["swap"] == "merge"
    assert dict(DUCKDB.as_rows())["swap"] == "delete-insert"


def test_a_sql_target_takes_part_in_what_its_capabilities_need_by_mixin() -> None:
    """The opt-in parts are mixins the core checks by isinstance: a SQL target with attached
    schemas and expiring partitions must be a SchemaAttacher and a PartitionExpirer."""
    needs = replace(TEXT, layouts=("census",), schemas=Schemas.ATTACHED, partition_expiry=True)
    assert missing_methods(SqlTarget, needs) == [
        "load_files",
        "expire_partitions",
        "attach_schema",
    ]

    class Attaching(SqlTarget, FileLoader, PartitionExpirer, SchemaAttacher):
        def attach_schema(self, relation: object) -> None: ...

    assert missing_methods(Attaching, needs) == ["load_files", "expire_partitions"]
    assert issubclass(Attaching, SchemaAttacher) and not issubclass(SqlTarget, SchemaAttacher)


def test_builtin_targets_are_registered_through_the_hook_like_any_plugin() -> None:
    pm = manager.plugin_manager()
    assert "synclog.default_targets" in {name for name, _ in pm.list_name_plugin()}
    assert {"duckdb", "lake"} <= {t.name for t in manager.registry().types()}
    assert manager.registry().for_url(TargetURL.parse("duckdb:///x.duckdb")) is TARGET_TYPE


def test_an_out_of_tree_plugin_registers_through_its_entry_point() -> None:
    """examples/synclog-sqlite, installed like any third-party plugin (its own tests run the suite)."""
    from synclog_sqlite import plugin

    assert "sqlite" in {name for name, _ in manager.plugin_manager().list_name_plugin()}
    assert manager.registry().for_url(TargetURL.parse("sqlite:///x.sqlite")) is plugin.TARGET_TYPE


LAZY_PLUGIN = """
from synclog import plugin_api as api

SYNCLOG_PLUGIN_API = 1
TARGET_TYPE = api.TargetType(
    name="lazy",
    schemes=("lazy",),
    capabilities=api.Capabilities(json_type="JSON", layouts=("census",)),
    summary="a target whose class is imported when it opens",
    opener="synclog_lazy_target:Lazy",
    file_url=True,
)
synclog_register_targets = api.registering(TARGET_TYPE)
"""


def test_a_plugin_registers_by_registering_and_its_class_is_imported_when_a_target_opens(
    tmp_path: Path,
) -> None:
    site = tmp_path / "site"
    site.mkdir()
    (site / "synclog_lazy_target.py").write_text("from synclog.targets.duckdb import DuckDBTarget as Lazy")
    try:
        with installed(site, "synclog_lazy", LAZY_PLUGIN):
            kind = manager.registry().for_url(TargetURL.parse("lazy:///x.db"))
            assert kind.name == "lazy"
            assert "synclog_lazy_target" not in sys.modules  # registered without importing the class
            target = kind.open(TargetURL.parse(f"lazy:///{tmp_path / 'lazy.duckdb'}"))
            try:
                assert "synclog_lazy_target" in sys.modules
                assert type(target).__name__ == "DuckDBTarget"
            finally:
                target.close()
    finally:
        sys.modules.pop("synclog_lazy_target", None)


def test_the_guide_lists_exactly_the_override_points_of_a_sql_target() -> None:
    """docs/plugins.md's tables of what a SQL target, its dialect, its client and a partition
    replacer may override are their public attributes not marked `@final` (mypy refuses a plugin
    that overrides a final one)."""
    guide = (Path(__file__).parents[1] / "docs" / "plugins.md").read_text()
    tables = {
        SqlTarget: "target override point",
        SqlDialect: "dialect hook",
        DbApiClient: "client override point",
        PartitionReplacer: "partition replacer hook",
    }
    for cls, header in tables.items():
        table = guide.split(f"| {header} | default |", 1)[1].split("\n\n", 1)[0]
        listed = set(re.findall(r"^\| `(\w+)", table, re.M))
        listed |= set(re.findall(r"^\| `[^`]+`, `(\w+)", table, re.M))  # two in a row
        assert listed == overridable(cls), cls.__name__


def test_the_guides_class_table_lists_every_conformance_class() -> None:
    """docs/plugins.md's section 7 names every class of the suite a plugin's tests may take
    (`TargetConformance` is all of them, `PortableConformance` all but QUALIFY's), and the two."""
    from synclog_testing import conformance
    from synclog_testing.base import ConformanceBase

    guide = (Path(__file__).parents[1] / "docs" / "plugins.md").read_text()
    section = guide.split("## 7. The conformance suite", 1)[1].split("## 8.", 1)[0]
    listed = set(re.findall(r"^\| `(\w+Conformance)` \|", section, re.M))
    classes = {
        name
        for name, value in vars(conformance).items()
        if isinstance(value, type) and issubclass(value, ConformanceBase) and value is not ConformanceBase
    }
    assert listed == classes - {"TargetConformance", "PortableConformance"}
    assert "`TargetConformance`" in section and "`PortableConformance`" in section


def test_every_warehouse_page_says_what_a_write_reads() -> None:
    """docs/warehouses/<target>.md (with the plugin README it includes) and the SQLite example's
    README say what a write reads on that warehouse."""
    root = Path(__file__).parents[1]
    pages = [p for p in (root / "docs" / "warehouses").glob("*.md") if p.name != "index.md"]
    for page in [*pages, root / "examples" / "synclog-sqlite" / "README.md"]:
        text = page.read_text()
        for included in re.findall(r'^--8<-- "([^"]+)"$', text, re.M):
            text += (root / included).read_text()
        assert "**What a write reads**" in text, page.name


def test_the_guide_lists_exactly_what_plugin_api_exports() -> None:
    """docs/plugins.md's section 10 names every export of `synclog.plugin_api` and nothing else,
    and every `api.X` in the guide, the official plugins and the example is exported."""
    root = Path(__file__).parents[1]
    guide = (root / "docs" / "plugins.md").read_text()
    section = guide.split("## 10. Everything `plugin_api` exports", 1)[1]
    listed = {
        name for row in re.findall(r"^\| (`.+?`) \|", section, re.M) for name in re.findall(r"`(\w+)`", row)
    }
    assert listed == set(api.__all__)
    modules = (p.read_text() for folder in ("plugins", "examples") for p in (root / folder).rglob("*.py"))
    sources = [guide, *(text for text in modules if "import plugin_api as api" in text)]
    used = {name for text in sources for name in re.findall(r"\bapi\.(\w+)", text)}
    assert used - set(api.__all__) == set()


def overridable(cls: type) -> set[str]:
    """The public attributes of `cls` that are not `@final`: methods and class variables."""
    names = set()
    for name in dir(cls):
        value = inspect.getattr_static(cls, name)
        if name.startswith("_") or hasattr(object, name):
            continue
        function = value.fget if isinstance(value, property) else getattr(value, "__func__", value)
        if not (getattr(value, "__final__", False) or getattr(function, "__final__", False)):
            names.add(name)
    return names


def test_unknown_scheme_names_the_plugin_to_install() -> None:
    with pytest.raises(ConfigError, match=r"no installed plugin handles oracle://.*synclog-oracle"):
        manager.registry().for_url(TargetURL.parse("oracle://u@host/db"))


def test_two_plugins_claiming_a_scheme_is_an_error() -> None:
    registry = manager.registry()
    with pytest.raises(ConfigError, match="both claim duckdb://"):
        registry.register(TARGET_TYPE.__class__(**{**TARGET_TYPE.__dict__, "name": "other-duckdb"}))


def test_a_misspelt_hook_fails_loudly() -> None:
    class Misspelt:
        @hookimpl
        def synclog_register_target(self, register: object) -> None:  # missing "s"
            """Never called: the hook name is wrong."""

    pm = pluggy.PluginManager("synclog")
    from synclog.plugins import hookspecs

    pm.add_hookspecs(hookspecs)
    pm.register(Misspelt())
    with pytest.raises(pluggy.PluginValidationError, match="unknown hook 'synclog_register_target'"):
        pm.check_pending()


def test_without_views_the_table_takes_its_views_name() -> None:
    from synclog.layouts.census import SYNC_LOG

    no_views = replace(TEXT, views=False, layouts=("census",))
    target = _NoReadBack(TargetURL.parse("noviews:///x"), TargetSettings(), no_views)
    assert (
        str(target.relation(SYNC_LOG)) == str(target.relation(SYNC_LOG, SYNC_LOG.view)) == "census.sync_log"
    )
    with_views = _NoReadBack(TargetURL.parse("views:///x"), TargetSettings(), TEXT)
    assert str(with_views.relation(SYNC_LOG)) == "census.sync_log_records"


def _view_statements(transactional_ddl: bool, tmp_path: Path) -> list[list[str]]:
    """The view DDL a SQLite target (no CREATE OR REPLACE VIEW) runs on each of three ensures:
    the census tables, the same again, then with a column added."""
    from synclog.layouts.census import SYNC_LOG
    from synclog.targets.tables import Column, ColumnType
    from synclog_sqlite.target import CAPABILITIES, SqliteClient, SqliteTarget

    class Recording(SqliteClient):
        statements: list[str] = []

        def cursor(self, sql: str, params: Any = ()) -> Any:
            self.statements.append(sql.split(" ", 1)[0] if sql.startswith(("BEGIN", "COMMIT")) else sql)
            return super().cursor(sql, params)

    capabilities = replace(CAPABILITIES, transactional_ddl=transactional_ddl)
    target = SqliteTarget(
        TargetURL.parse(f"sqlite:///{tmp_path / 'ddl.sqlite'}"), TargetSettings(), capabilities
    )
    opened = target.client
    target.client = recording = Recording(opened.connection, opened.outages, opened.where, opened.dialect)
    wider = replace(SYNC_LOG, columns=(*SYNC_LOG.columns, Column("added_later", ColumnType.STRING)))
    seen = []
    for table in (SYNC_LOG, SYNC_LOG, wider):
        recording.statements.clear()
        target.ensure([table])
        seen.append([s for s in recording.statements if "VIEW" in s or s in ("BEGIN", "COMMIT")])
    names = target.query("SELECT name FROM pragma_table_info('sync_log', 'census')").column(0).to_pylist()
    assert names[-1] == "added_later"
    target.close()
    return seen


def test_without_transactional_ddl_a_view_is_recreated_only_when_its_columns_change(tmp_path: Path) -> None:
    first, again, widened = _view_statements(transactional_ddl=False, tmp_path=tmp_path)
    assert [s.split(" ", 2)[:2] for s in first] == [["DROP", "VIEW"], ["CREATE", "VIEW"]]
    assert again == []
    assert [s.split(" ", 2)[:2] for s in widened] == [["DROP", "VIEW"], ["CREATE", "VIEW"]]


def test_with_transactional_ddl_a_view_is_dropped_and_created_in_one_transaction(tmp_path: Path) -> None:
    for statements in _view_statements(transactional_ddl=True, tmp_path=tmp_path):
        assert [s.split(" ", 2)[:2] for s in statements] == [
            ["BEGIN"],
            ["DROP", "VIEW"],
            ["CREATE", "VIEW"],
            ["COMMIT"],
        ]


def test_the_target_type_gives_connector_and_target_their_capabilities(tmp_path: Path) -> None:
    """One declaration: the type's capabilities, refined from the target's settings before
    connecting, are what the connector reports and what the opened target acts on."""

    def refine(declared: Capabilities, url: TargetURL, settings: TargetSettings) -> Capabilities:
        return replace(declared, identifier_quote="`") if settings.database == "ticks" else declared

    kind = replace(TARGET_TYPE, refine=refine)
    url = TargetURL.parse(f"duckdb:///{tmp_path / 'x.duckdb'}")
    assert Connector.for_type(kind, url, TargetSettings()).capabilities == TARGET_TYPE.capabilities
    connector = Connector.for_type(kind, url, TargetSettings(database="ticks"))
    assert connector.capabilities.identifier_quote == "`"
    assert connector.target.capabilities == connector.capabilities
    assert connector.target.dialect.quote("odd") == "`odd`"
    connector.close()
