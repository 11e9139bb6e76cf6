"""Unity Catalog style three-part names (``census.census.sync_log``) on a local Spark session.

Open-source Spark's session catalog (``spark_catalog``) takes ``schema.table`` only. The one
thing that gives local Spark ``catalog.schema.table`` with every feature of the session catalog
(partitioned Parquet tables, dynamic partition overwrite, ``ALTER TABLE … DROP PARTITION``,
views, ``ADD COLUMNS``) is a catalog plugin that is another name for the session catalog. No
such class ships in pyspark's jars, so :func:`ensure_catalog_jar` compiles one
(``java/SessionCatalogAlias.java``, 20 lines) with the JDK's ``javac`` against pyspark's jars
and caches the jar. ``DATABRICKS_NOTES.md`` beside this file says what was tried and why this.

Usage, in a process that has no Spark session yet::

    builder = SparkSession.builder.master("local[1]")
    for key, value in unity_catalog_confs(["census", "mycatalog"]).items():
        builder = builder.config(key, value)
    spark = builder.getOrCreate()
    spark.sql("CREATE SCHEMA IF NOT EXISTS census.census")

Every alias shares the session catalog's databases: ``census.census.t``,
``mycatalog.census.t`` and ``census.t`` are one table. Missing pyspark or ``javac`` raises
:class:`ServerUnavailable` (tests skip); a compile that fails raises :class:`ServerStartError`.
"""

from __future__ import annotations

import fcntl
import hashlib
import importlib.metadata
import importlib.util
import os
import re
import shutil
import subprocess
import tempfile
import zipfile
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from pathlib import Path

from .errors import ServerStartError, ServerUnavailable

__all__ = [
    "CATALOG_CLASS",
    "DEFAULT_CACHE_DIR",
    "JAVA_SOURCE",
    "ensure_catalog_jar",
    "find_javac",
    "pyspark_jars_dir",
    "unity_catalog_confs",
]

#: The plugin class to register as ``spark.sql.catalog.<name>``.
CATALOG_CLASS = "synclog.harness.SessionCatalogAlias"
JAVA_SOURCE = Path(__file__).resolve().parent / "java" / "SessionCatalogAlias.java"
#: Where built jars are kept (``<repo>/.cache/spark-catalogs``); ``$SYNCLOG_SPARK_CATALOGS_CACHE`` overrides.
DEFAULT_CACHE_DIR = Path(__file__).resolve().parents[2] / ".cache" / "spark-catalogs"
CACHE_ENV = "SYNCLOG_SPARK_CATALOGS_CACHE"

_JAVA_RELEASE = "17"  # pyspark 4 needs Java 17+; class files for 17 load on 21 and later too
_COMPILE_TIMEOUT_S = 180.0
_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


def unity_catalog_confs(
    catalogs: Iterable[str] = ("census",), *, cache_dir: Path | None = None
) -> dict[str, str]:
    """Spark confs under which ``<catalog>.<schema>.<table>`` resolves for each of ``catalogs``.

    Builds (or reuses) the alias jar. The confs are static (``spark.jars``): apply them to a
    new session; merge a ``spark.jars`` of your own with a comma.
    """
    names = list(catalogs)
    for name in names:
        if not _NAME.fullmatch(name) or name.lower() == "spark_catalog":
            raise ValueError(f"not a catalog name for an alias: {name!r}")
    confs = {"spark.jars": str(ensure_catalog_jar(cache_dir))}
    confs.update({f"spark.sql.catalog.{name}": CATALOG_CLASS for name in names})
    return confs


def pyspark_jars_dir() -> Path:
    """The ``jars`` folder of the installed pyspark (compile classpath and Spark version)."""
    spec = importlib.util.find_spec("pyspark")
    locations = list(spec.submodule_search_locations or []) if spec else []
    for location in locations:
        jars = Path(location) / "jars"
        if jars.is_dir():
            return jars
    raise ServerUnavailable("pyspark with its jars is not installed here")


def find_javac() -> Path:
    """``$JAVA_HOME/bin/javac``, else ``javac`` on PATH; a JRE alone is not enough."""
    candidates = []
    if os.environ.get("JAVA_HOME"):
        candidates.append(Path(os.environ["JAVA_HOME"]) / "bin" / "javac")
    found = shutil.which("javac")
    if found:
        candidates.append(Path(found))
    for candidate in candidates:
        if os.access(candidate, os.X_OK):
            return candidate
    raise ServerUnavailable(
        "building the Spark catalog alias needs a JDK's javac (a JRE has none): "
        "apt-get install openjdk-17-jdk-headless, or set JAVA_HOME to a JDK"
    )


def ensure_catalog_jar(cache_dir: Path | None = None) -> Path:
    """The alias jar for the installed pyspark, compiled on first use and cached by content.

    The cache key covers the Java source and pyspark's version, so a new pyspark rebuilds it.
    Builds are serialised across processes by a lock file in ``cache_dir``.
    """
    jars = pyspark_jars_dir()
    source = JAVA_SOURCE.read_bytes()
    try:
        version = importlib.metadata.version("pyspark")
    except importlib.metadata.PackageNotFoundError:
        version = ",".join(sorted(p.name for p in jars.glob("spark-sql_*.jar")))
    key = hashlib.sha256(source + version.encode() + _JAVA_RELEASE.encode()).hexdigest()[:16]
    cache = Path(cache_dir if cache_dir is not None else os.environ.get(CACHE_ENV) or DEFAULT_CACHE_DIR)
    jar = cache / f"synclog-catalog-alias-{key}.jar"
    if jar.is_file():
        return jar
    cache.mkdir(parents=True, exist_ok=True)
    with _exclusive_lock(cache / ".build.lock"):
        if jar.is_file():
            return jar
        javac = find_javac()
        with tempfile.TemporaryDirectory(prefix="synclog-javac-") as tmp:
            classes = Path(tmp) / "classes"
            cmd = [
                str(javac), "--release", _JAVA_RELEASE, "-nowarn", "-d", str(classes),
                "-cp", str(jars / "*"), str(JAVA_SOURCE),
            ]  # fmt: skip
            try:
                proc = subprocess.run(
                    cmd, capture_output=True, text=True, timeout=_COMPILE_TIMEOUT_S, check=False
                )
            except subprocess.TimeoutExpired:
                raise ServerStartError(f"javac did not finish in {_COMPILE_TIMEOUT_S:.0f}s") from None
            if proc.returncode != 0:
                raise ServerStartError(f"javac failed (exit {proc.returncode}):\n{proc.stderr[-4000:]}")
            partial = jar.with_suffix(".tmp")
            with zipfile.ZipFile(partial, "w", zipfile.ZIP_DEFLATED) as archive:
                archive.writestr("META-INF/MANIFEST.MF", "Manifest-Version: 1.0\r\n\r\n")
                for path in sorted(classes.rglob("*.class")):
                    archive.write(path, path.relative_to(classes).as_posix())
            partial.replace(jar)
    return jar


@contextmanager
def _exclusive_lock(path: Path) -> Iterator[None]:
    with path.open("a") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)
