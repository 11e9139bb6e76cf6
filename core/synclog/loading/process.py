"""The loader as a process of its own: started in the background, found, stopped.

`start` runs `synclog loader run` for a target in a session of its own (so it outlives the
command), from the current folder (its `synclog.toml`), its output in
`$SYNCLOG_SPARK_DIR/loader-<target>.log` (default `~/.cache/synclog`, beside the warm Spark
server's), and returns once the loader holds its lease and is connected. Where a loader already
serves the storage and target, `start` keeps it. `stop` asks it to stop (SIGTERM: it ends the
tick under way, gives the lease back and exits).
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from synclog.errors import ConfigError, TargetError
from synclog.loading.lease import Holder, Lease
from synclog.spark_server import state_dir
from synclog.storage.owners import host

START_TIMEOUT_S = 300.0
STOP_TIMEOUT_S = 120.0
READY = "loading "
"""How the loader's first line begins, once it holds the lease and is connected."""


def log_file(lease: Lease) -> Path:
    """Where a loader started by `start` writes what it says."""
    return state_dir() / f"loader-{lease.target}.log"


def start(lease: Lease, target: str, config: str | None) -> tuple[Holder, bool]:
    """Start a loader for `target` (a URL or a name from `synclog.toml`, as `lease` names it)
    unless one serves; the loader, and whether this call started it. Raises TargetError when it
    exits before it is ready (with its last line)."""
    running = lease.holder()
    if running is not None:
        return running, False
    log = log_file(lease)
    log.parent.mkdir(parents=True, exist_ok=True)
    command = [sys.executable, "-m", "synclog", *(["--config", config] if config else [])]
    command += ["loader", "run", *(["--target", target] if target else [])]
    with log.open("wb") as out:
        proc = subprocess.Popen(
            command, stdin=subprocess.DEVNULL, stdout=out, stderr=subprocess.STDOUT, start_new_session=True
        )
    deadline = time.monotonic() + START_TIMEOUT_S
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise TargetError(f"the loader exited with {proc.returncode}: {_last_line(log)}")
        held = lease.holder()
        if held is not None and held.pid == proc.pid and READY in log.read_text(errors="replace"):
            return held, True
        time.sleep(0.2)
    proc.terminate()
    raise TargetError(f"the loader was not ready in {START_TIMEOUT_S:.0f} s (see {log})")


def stop(lease: Lease) -> Holder | None:
    """Stop the loader that serves the lease's storage and target; what was stopped, or None.
    A loader on another host is stopped there (ConfigError)."""
    running = lease.holder()
    if running is None:
        return None
    if running.host != host():
        raise ConfigError(f"the loader runs on {running.host}: stop it there")
    os.kill(running.pid, signal.SIGTERM)
    deadline = time.monotonic() + STOP_TIMEOUT_S
    while time.monotonic() < deadline and lease.holder() is not None:
        time.sleep(0.2)
    if lease.holder() is not None:
        raise TargetError(f"the loader (pid {running.pid}) did not stop in {STOP_TIMEOUT_S:.0f} s")
    return running


def _last_line(log: Path) -> str:
    lines = [line for line in log.read_text(encoding="utf-8", errors="replace").splitlines() if line.strip()]
    return lines[-1].strip() if lines else f"(nothing in {log})"
