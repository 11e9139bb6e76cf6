"""Run ``local-bigquery`` as a server process for tests of the real BigQuery client.

Usage::

    with local_bigquery_server() as bq:
        client = bigquery.Client(
            project=bq.project,
            credentials=AnonymousCredentials(),
            client_options={"api_endpoint": bq.endpoint},
        )

``local-bigquery`` serves the BigQuery REST API (and the Storage gRPC API) on
DuckDB. It needs Python >= 3.13 while the project runs on 3.11, so it lives in a
venv of its own, built once by :func:`ensure_local_bigquery_venv` (default
``<repo>/.cache/local-bigquery``) and reused while it still works.

The recipe that works here: ``local-bigquery==0.3.2`` with ``duckdb==1.5.5`` and
the ``duckdb-extension-*==1.5.5`` wheels, each installed into DuckDB with
``INSTALL '<path of the .duckdb_extension file inside the wheel>'`` (DuckDB
cannot download extensions here). The extensions are installed under
``<venv>/duckdb-home/.duckdb`` and the server runs with ``HOME`` pointing there,
so nothing is written to the real home directory.

Each server gets a free loopback port, a fresh temp data dir (deleted on exit)
and ``gs://BUCKET/PATH`` mapped to ``<gcs_root>/BUCKET/PATH`` for load jobs.
No Python >= 3.13 or a failed install raises :class:`ServerUnavailable` (tests
skip); a server that is installed but does not answer raises
:class:`ServerStartError` with the tail of its log.
"""

from __future__ import annotations

import fcntl
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from .errors import ServerStartError, ServerUnavailable
from .processes import PortTaken, free_port, log_tail, lost_port_race, spawn, start_on_free_port, stop_process

__all__ = [
    "DEFAULT_CACHE_DIR",
    "DEFAULT_PROJECT",
    "LOCAL_BIGQUERY_REQUIREMENTS",
    "BigQueryServer",
    "ServerStartError",
    "ServerUnavailable",
    "default_cache_dir",
    "ensure_local_bigquery_venv",
    "find_python",
    "local_bigquery_server",
]

HOST = "127.0.0.1"
DEFAULT_PROJECT = "synclog-test"
#: Where the project keeps the server's venv (``<repo>/.cache/local-bigquery``).
DEFAULT_CACHE_DIR = Path(__file__).resolve().parents[2] / ".cache" / "local-bigquery"

#: Environment variable: a Python >= 3.13 interpreter to build the venv with.
PYTHON_ENV = "SYNCLOG_LOCAL_BIGQUERY_PYTHON"
#: Environment variable: the venv directory (overrides ``DEFAULT_CACHE_DIR``).
CACHE_ENV = "SYNCLOG_LOCAL_BIGQUERY_CACHE"

MIN_PYTHON = (3, 13)
DUCKDB_EXTENSIONS = ("ducklake", "icu", "json", "parquet", "spatial")
LOCAL_BIGQUERY_REQUIREMENTS = (
    "local-bigquery==0.3.2",
    "duckdb==1.5.5",
    *(f"duckdb-extension-{name}==1.5.5" for name in DUCKDB_EXTENSIONS),
)

_MARKER = ".synclog-ready.json"  # written last: its absence means "half built"
_BUILDING = ".synclog-building"  # written first: lets a rebuild delete the dir
_DUCKDB_HOME = "duckdb-home"
_INSTALL_TIMEOUT_S = 900.0
_SMOKE_TIMEOUT_S = 60.0
_STOP_TIMEOUT_S = 10.0
_PORT_ATTEMPTS = 3
_LOG_TAIL_CHARS = 4000
# Settings local-bigquery reads from the environment (pydantic-settings, no prefix)
# that must not leak in from the caller's environment.
_SCRUBBED_ENV = (
    "PYTHONPATH",
    "PYTHONHOME",
    "PYTHONSTARTUP",
    "VIRTUAL_ENV",
    "BIGQUERY_HOST",
    "BIGQUERY_PORT",
    "GRPC_PORT",
    "DATA_DIR",
    "DEFAULT_PROJECT_ID",
    "DEFAULT_DATASET_ID",
    "CALLER",
    "GROUPS",
    "GCS_LOCAL_ROOT",
    "STORAGE_EMULATOR_HOST",
    "POSTGRES_URI",
    "POSTGRES_CONNECTION_ID",
)

# Run inside the server venv with HOME=<venv>/duckdb-home: install every extension
# from the .duckdb_extension file its wheel ships, then load them all.
_INSTALL_EXTENSIONS = """
import importlib.util, pathlib, sys
import duckdb
con = duckdb.connect()
for name in sys.argv[1:]:
    spec = importlib.util.find_spec(f"duckdb_extension_{name}")
    roots = list(spec.submodule_search_locations or []) if spec else []
    files = sorted(f for r in roots for f in pathlib.Path(r).rglob(f"{name}.duckdb_extension"))
    if not files:
        sys.exit(f"no {name}.duckdb_extension file in the duckdb-extension-{name} wheel")
    con.execute("INSTALL '" + str(files[0]).replace("'", "''") + "'")
"""
# The server's first statement is duckdb.connect(config={"TimeZone": "UTC"}): needs icu.
# Loading spatial takes seconds, so it is only checked to be installed.
_SMOKE_TEST = """
import sys
import duckdb
con = duckdb.connect(config={"TimeZone": "UTC"})
for name in ("ducklake", "json", "parquet"):
    con.execute(f"LOAD {name}")
rows = con.execute("SELECT extension_name FROM duckdb_extensions() WHERE installed").fetchall()
installed = {name for (name,) in rows}
missing = set(sys.argv[1:]) - installed
sys.exit(f"not installed: {sorted(missing)}" if missing else 0)
"""


@dataclass(frozen=True)
class BigQueryServer:
    """A running ``local-bigquery``; valid only inside :func:`local_bigquery_server`."""

    endpoint: str
    """REST root for ``client_options={"api_endpoint": endpoint}``: ``http://127.0.0.1:PORT``."""
    project: str
    """The server's default project (any other project id works too, created on use)."""
    grpc_endpoint: str
    """``127.0.0.1:PORT`` of the BigQuery Storage (read/write) gRPC API."""
    base_dir: Path
    """Temp dir holding ``data/``, ``gcs/`` and ``server.log``; deleted on exit."""

    @property
    def data_dir(self) -> Path:
        return self.base_dir / "data"

    @property
    def gcs_root(self) -> Path:
        """Load jobs read ``gs://BUCKET/PATH`` from ``gcs_root / BUCKET / PATH``."""
        return self.base_dir / "gcs"

    @property
    def log_file(self) -> Path:
        return self.base_dir / "server.log"

    def gcs_uri(self, path: Path) -> str:
        """The ``gs://`` URI of a file under :attr:`gcs_root`."""
        return "gs://" + path.resolve().relative_to(self.gcs_root.resolve()).as_posix()


def find_python() -> Path:
    """A Python >= 3.13 with ``venv``: ``$SYNCLOG_LOCAL_BIGQUERY_PYTHON``, pyenv's, or on PATH."""
    candidates: list[Path] = []
    override = os.environ.get(PYTHON_ENV)
    if override:
        candidates.append(Path(override))
    pyenv_roots = [Path(os.environ["PYENV_ROOT"])] if os.environ.get("PYENV_ROOT") else []
    pyenv_roots += [Path.home() / ".pyenv", Path("/root/.pyenv")]
    for root in dict.fromkeys(pyenv_roots):
        versions = (root / "versions").glob("3.*")
        for version_dir in sorted(versions, key=lambda p: _version_key(p.name)):
            if _version_key(version_dir.name)[:2] >= MIN_PYTHON:
                candidates.append(version_dir / "bin" / "python3")
    if sys.version_info[:2] >= MIN_PYTHON:
        candidates.append(Path(sys.executable))
    for name in ("python3.13", "python3.14", "python3.15", "python3"):
        found = shutil.which(name)
        if found:
            candidates.append(Path(found))

    tried: list[str] = []
    for candidate in dict.fromkeys(candidates):
        version = _python_version(candidate)
        if version is not None and version >= MIN_PYTHON:
            return candidate
        tried.append(f"{candidate} ({'.'.join(map(str, version)) if version else 'unusable'})")
    raise ServerUnavailable(
        f"local-bigquery needs Python >= {'.'.join(map(str, MIN_PYTHON))} with venv; "
        f"none found (tried: {', '.join(tried) or 'nothing'}; set ${PYTHON_ENV})"
    )


def default_cache_dir() -> Path:
    """``$SYNCLOG_LOCAL_BIGQUERY_CACHE`` if set, else ``<repo>/.cache/local-bigquery``."""
    override = os.environ.get(CACHE_ENV)
    return Path(override) if override else DEFAULT_CACHE_DIR


def ensure_local_bigquery_venv(cache_dir: Path, *, python: Path | None = None) -> Path:
    """Build the ``local-bigquery`` venv at ``cache_dir`` once; return ``cache_dir``.

    A venv whose ready-marker matches this recipe, whose DuckDB starts with
    ``TimeZone=UTC`` (icu) and has every extension installed is reused as is.
    Anything else at ``cache_dir`` that this function built (or an empty dir) is
    deleted and rebuilt, so a half-built venv heals.
    Builds are serialised across processes by a lock file beside ``cache_dir``.

    Raises :class:`ServerUnavailable` if no Python >= 3.13 is found or the install fails.
    """
    venv = Path(os.path.abspath(cache_dir))
    venv.parent.mkdir(parents=True, exist_ok=True)
    with _exclusive_lock(venv.parent / f".{venv.name}.lock"):
        if _is_ready(venv):
            return venv
        interpreter = python if python is not None else find_python()
        version = _python_version(interpreter)
        if version is None or version < MIN_PYTHON:
            raise ServerUnavailable(f"{interpreter} is not a usable Python >= 3.13")
        _remove_stale(venv)
        venv.mkdir(parents=True)
        (venv / _BUILDING).write_text("", encoding="utf-8")
        _check(
            [str(interpreter), "-m", "venv", str(venv)],
            what=f"creating the venv with {interpreter}",
            env=_clean_env(),
        )
        _check(
            [
                str(_venv_python(venv)),
                "-m",
                "pip",
                "install",
                "--disable-pip-version-check",
                "--no-input",
                *LOCAL_BIGQUERY_REQUIREMENTS,
            ],
            what="pip install " + " ".join(LOCAL_BIGQUERY_REQUIREMENTS),
            env=_clean_env(),
        )
        (venv / _DUCKDB_HOME).mkdir(exist_ok=True)
        _check(
            [str(_venv_python(venv)), "-c", _INSTALL_EXTENSIONS, *DUCKDB_EXTENSIONS],
            what="installing the DuckDB extensions from their wheels",
            env=_server_env(venv),
        )
        if not _smoke_test(venv):
            raise ServerUnavailable(
                f"the local-bigquery venv at {venv} was built but its DuckDB smoke check "
                f"(load/installed: {', '.join(DUCKDB_EXTENSIONS)}) fails"
            )
        marker = venv / _MARKER
        tmp = marker.with_suffix(".tmp")
        tmp.write_text(json.dumps(_recipe(), indent=2, sort_keys=True), encoding="utf-8")
        tmp.replace(marker)
        (venv / _BUILDING).unlink(missing_ok=True)
        return venv


@contextmanager
def local_bigquery_server(
    cache_dir: Path | None = None,
    *,
    project: str = DEFAULT_PROJECT,
    startup_timeout: float = 60.0,
    parent_dir: Path | None = None,
) -> Iterator[BigQueryServer]:
    """Run a fresh ``local-bigquery`` for the duration of the ``with`` block.

    ``cache_dir`` is the server venv (default ``$SYNCLOG_LOCAL_BIGQUERY_CACHE`` or
    ``<repo>/.cache/local-bigquery``), built on first use. ``parent_dir`` is where
    the temp dir is made. The server is stopped (SIGTERM, then SIGKILL) and its
    temp dir removed on exit, also when the body raises.

    Raises :class:`ServerUnavailable` if the venv cannot be built here and
    :class:`ServerStartError` if the server does not answer within ``startup_timeout``.
    """
    venv = ensure_local_bigquery_venv(cache_dir if cache_dir is not None else default_cache_dir())
    base_dir = Path(tempfile.mkdtemp(prefix="synclog-local-bigquery-", dir=parent_dir))
    proc: subprocess.Popen[bytes] | None = None
    try:
        (base_dir / "gcs").mkdir()
        proc, server = _start(venv, base_dir, project=project, timeout=startup_timeout)
        yield server
    finally:
        try:
            if proc is not None:
                stop_process(proc, _STOP_TIMEOUT_S)
        finally:
            shutil.rmtree(base_dir, ignore_errors=True)


# --------------------------------------------------------------------------- internals


def _start(
    venv: Path, base_dir: Path, *, project: str, timeout: float
) -> tuple[subprocess.Popen[bytes], BigQueryServer]:
    """Start the server on free ports (retrying a lost port race) and wait until it answers."""
    log_file = base_dir / "server.log"

    def launch() -> tuple[subprocess.Popen[bytes], BigQueryServer]:
        port, grpc_port = free_port(), free_port()
        server = BigQueryServer(
            endpoint=f"http://{HOST}:{port}",
            project=project,
            grpc_endpoint=f"{HOST}:{grpc_port}",
            base_dir=base_dir,
        )
        cmd = [
            str(venv / "bin" / "local-bigquery"),
            "serve",
            "--host", HOST,
            "--port", str(port),
            "--grpc-port", str(grpc_port),
            "--project", project,
            "--data-dir", str(server.data_dir),
        ]  # fmt: skip
        env = {**_server_env(venv), "GCS_LOCAL_ROOT": str(server.gcs_root)}
        return spawn(cmd, cwd=base_dir, env=env, log_path=log_file), server

    return start_on_free_port(
        launch,
        lambda proc, server: _wait_until_ready(proc, server, timeout=timeout),
        lambda proc: stop_process(proc, _STOP_TIMEOUT_S),
        what="local-bigquery",
        log_path=log_file,
        attempts=_PORT_ATTEMPTS,
    )


def _wait_until_ready(proc: subprocess.Popen[bytes], server: BigQueryServer, *, timeout: float) -> None:
    """Poll ``datasets.list`` (which opens DuckDB, so it proves the extensions load)."""
    url = f"{server.endpoint}/bigquery/v2/projects/{server.project}/datasets"
    started = time.monotonic()
    deadline = started + timeout
    last = "no answer yet"
    while time.monotonic() < deadline:
        code = proc.poll()
        if code is not None:
            tail = log_tail(server.log_file)
            if lost_port_race(tail):
                raise PortTaken
            raise ServerStartError(
                f"local-bigquery exited with code {code} before answering at {server.endpoint}; "
                f"server log tail:\n{tail}"
            )
        try:
            with urllib.request.urlopen(url, timeout=5) as response:
                if response.status == 200:
                    return
                last = f"HTTP {response.status}"
        except urllib.error.HTTPError as error:
            body = error.read().decode("utf-8", "replace")[:1000]
            raise ServerStartError(
                f"local-bigquery answered GET {url} with HTTP {error.code}: {body}; "
                f"server log tail:\n{log_tail(server.log_file)}"
            ) from None
        except (urllib.error.URLError, OSError) as error:
            last = str(getattr(error, "reason", error))
        time.sleep(0.1)
    raise ServerStartError(
        f"local-bigquery did not answer at {server.endpoint} within {timeout:.0f}s "
        f"(last: {last}); server log tail:\n{log_tail(server.log_file)}"
    )


def _recipe() -> dict[str, object]:
    return {"requirements": list(LOCAL_BIGQUERY_REQUIREMENTS), "extensions": list(DUCKDB_EXTENSIONS)}


def _is_ready(venv: Path) -> bool:
    marker = venv / _MARKER
    try:
        recorded = json.loads(marker.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return False
    if recorded != _recipe() or (venv / _BUILDING).exists():
        return False
    if not os.access(venv / "bin" / "local-bigquery", os.X_OK):
        return False
    return _smoke_test(venv)


def _smoke_test(venv: Path) -> bool:
    try:
        proc = subprocess.run(
            [str(_venv_python(venv)), "-c", _SMOKE_TEST, *DUCKDB_EXTENSIONS],
            env=_server_env(venv),
            stdin=subprocess.DEVNULL,
            capture_output=True,
            timeout=_SMOKE_TIMEOUT_S,
            check=False,
        )
    except (OSError, subprocess.SubprocessError):
        return False
    return proc.returncode == 0


def _remove_stale(venv: Path) -> None:
    """Delete a previous (possibly half-built) venv, but only one this module made."""
    if not venv.exists():
        return
    ours = any((venv / name).exists() for name in (_MARKER, _BUILDING, "pyvenv.cfg"))
    if not ours and any(venv.iterdir()):
        raise ServerUnavailable(
            f"{venv} exists and is not a local-bigquery venv built by the harness; "
            "refusing to delete it (pass another cache_dir)"
        )
    shutil.rmtree(venv)


def _check(cmd: Sequence[str], *, what: str, env: dict[str, str]) -> None:
    try:
        proc = subprocess.run(
            list(cmd),
            env=env,
            stdin=subprocess.DEVNULL,
            capture_output=True,
            text=True,
            timeout=_INSTALL_TIMEOUT_S,
            check=False,
        )
    except subprocess.TimeoutExpired:
        raise ServerUnavailable(f"{what}: timed out after {_INSTALL_TIMEOUT_S:.0f}s") from None
    except OSError as error:
        raise ServerUnavailable(f"{what}: {error}") from None
    if proc.returncode != 0:
        output = (proc.stdout + proc.stderr).strip()
        lines = [line for line in output.splitlines() if "is ignored: it is neither" not in line]
        raise ServerUnavailable(f"{what} failed (exit {proc.returncode}):\n{_tail_text(chr(10).join(lines))}")


def _clean_env() -> dict[str, str]:
    return {k: v for k, v in os.environ.items() if k.upper() not in _SCRUBBED_ENV}


def _server_env(venv: Path) -> dict[str, str]:
    """HOME points DuckDB at ``<venv>/duckdb-home/.duckdb/extensions``."""
    env = _clean_env()
    env["HOME"] = str(venv / _DUCKDB_HOME)
    return env


def _venv_python(venv: Path) -> Path:
    return venv / "bin" / "python"


def _python_version(python: Path) -> tuple[int, int] | None:
    """``(major, minor)`` of an interpreter that can make venvs with pip, else None."""
    try:
        proc = subprocess.run(
            [str(python), "-c", "import sys, venv, ensurepip; print(*sys.version_info[:2])"],
            env=_clean_env(),
            stdin=subprocess.DEVNULL,
            capture_output=True,
            text=True,
            timeout=30,
            check=False,
        )
    except (OSError, subprocess.SubprocessError):
        return None
    parts = proc.stdout.split()
    if proc.returncode != 0 or len(parts) != 2 or not all(p.isdigit() for p in parts):
        return None
    return int(parts[0]), int(parts[1])


def _version_key(name: str) -> tuple[int, ...]:
    return tuple(int(part) for part in re.findall(r"\d+", name)[:3])


@contextmanager
def _exclusive_lock(path: Path) -> Iterator[None]:
    with path.open("a") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def _tail_text(text: str) -> str:
    text = text.strip()
    return text if len(text) <= _LOG_TAIL_CHARS else "…" + text[-_LOG_TAIL_CHARS:]
