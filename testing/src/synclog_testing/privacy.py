"""What privacy tests check with: a policy with a known key, its digests, every value files hold,
and the demo (or its last runs) written under a policy, read back through `synclog records` and
`synclog runs`."""

from __future__ import annotations

import csv
import hashlib
import hmac
import json
from datetime import UTC, datetime
from pathlib import Path

import pyarrow.fs as pafs
import pyarrow.parquet as pq
import pytest
from pyspark.sql import SparkSession

from synclog.cli.demo import demo_config
from synclog.cli.main import main
from synclog.config import Config
from synclog.demo.simulator import history, records
from synclog.privacy import Mask, PayloadPolicy
from synclog.storage.location import Location
from synclog.tracking import RECORDS, RUNS
from synclog.writer import SyncLog

MASK_KEY_ENV = "SYNCLOG_TEST_MASK_KEY"
MASK_KEY = "synclog-test-mask-key-0123456789"
EMAIL = r"[\w.+-]+@[\w-]+\.[\w.]+"
RAW = "@example.com"
"""What every raw email of the factories ends with: found nowhere once masked."""
POLICY = PayloadPolicy(
    log_fields=("email", "seats"),
    mask={"email": Mask.HMAC},
    mask_key_env=MASK_KEY_ENV,
    redact_messages=(EMAIL,),
    mask_identifier=Mask.HMAC,
)
"""Logs `email` (as a digest) and `seats` of the factories' payloads, drops `plan`."""


def digest(text: str) -> str:
    """HMAC-SHA256 of `text` under `MASK_KEY`, computed with Python's hmac as a reader would."""
    return hmac.new(MASK_KEY.encode(), text.encode(), hashlib.sha256).hexdigest()


def files_text(location: Location) -> tuple[int, str]:
    """How many files `location` holds, and all their contents as text: each file's bytes, and
    for Parquet files every decoded value too (compressed pages hide their strings; the rows are
    tuples, so column names do not pass for payload fields)."""
    fs = location.filesystem()
    selector = pafs.FileSelector(location.root, recursive=True, allow_not_found=True)
    found = [info.path for info in fs.get_file_info(selector) if info.is_file]
    texts = []
    for path in found:
        with fs.open_input_file(path) as handle:
            data = handle.read()
            texts.append(data.decode("utf-8", "replace"))
            if data[:4] == b"PAR1":
                texts.append(str([tuple(r.values()) for r in pq.read_table(handle).to_pylist()]))
    return len(found), "\n".join(texts)


def holds_field(text: str, name: str) -> bool:
    """Whether `text` holds a JSON object (or a Python dict) with the key `name`."""
    return f'"{name}"' in text or f"'{name}'" in text


DEMO_SCALE = "0.02"
DEMO_EMAILS = tuple(f"user{n:06d}@example.com" for n in range(1, 601))
"""Every identifier the demo's people have at `DEMO_SCALE` (600 people per sync at most)."""
DEMO_LOG_FIELDS = ("email", "plan", "model_version")
DEMO_DROPPED = ("lifetime_value", "marketing_opt_in", "tags", "name")
"""The demo's payload fields outside `DEMO_LOG_FIELDS`."""


def check_masked(text: str, fields: tuple[str, ...] = DEMO_DROPPED) -> None:
    """`text` (values of tables or files) holds no raw email, none of `fields`, and some digest."""
    assert RAW not in text, "a raw email"
    for name in fields:
        assert not holds_field(text, name), f"the field {name!r}, outside log_fields"
    assert any(digest(email) in text for email in DEMO_EMAILS), "no digest of the demo's emails"


def masked_config(folder: Path, storage: str) -> Path:
    """A synclog.toml in `folder` with the demo's payload policy (the key in `MASK_KEY_ENV`)."""
    config = folder / "synclog.toml"
    config.write_text(
        f"storage = {json.dumps(storage)}\n\n[defaults]\n"
        f"log_fields = {json.dumps(list(DEMO_LOG_FIELDS))}\n"
        f'mask = {{ email = "hmac" }}\nmask_key_env = "{MASK_KEY_ENV}"\nmask_identifier = "hmac"\n'
        f"redact_messages = ['{EMAIL}']\n"
    )
    return config


def masked_demo(folder: Path, target: str, storage: str) -> Path:
    """Run the demo's last five days (three runs of each sync, the failed one among them) into
    `target` with a payload policy (the key in `MASK_KEY_ENV` already); return the synclog.toml
    it used."""
    config = masked_config(folder, storage)
    args = ["demo", "--scale", DEMO_SCALE, "--days", "5", "--target", target]
    assert main(["--config", str(config), *args]) == 0
    return config


def masked_demo_runs(folder: Path, target: str, storage: str, spark: SparkSession, runs: int = 3) -> Path:
    """The demo's last `runs` runs of sync 1234 (what `check_tracking_cli` reads), as `synclog
    demo` writes them (every layout the target holds), under `masked_demo`'s payload policy: a
    few writes where the whole demo makes dozens. Return the synclog.toml it used."""
    config = masked_config(folder, storage)
    scale = float(DEMO_SCALE)
    simulated = history(datetime.now(UTC).replace(microsecond=0), scale)
    with SyncLog.open(target, Config.load(config), spark) as log:
        log.config = demo_config(log.config, log.connector.capabilities.layouts)
        for sim in [sim for sim in simulated if sim.run.sync_id == 1234][-runs:]:
            log.write_run(sim.run, records(spark, sim, scale))
    return config


def check_tracking_cli(
    config: Path, target: str, layout: str, folder: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """`synclog records` and `synclog runs` on one layout of a masked demo: filters, files, pages,
    and a search by a raw identifier that only its digest is logged as."""
    common = ["--config", str(config)]
    where = ["--target", target, "--sync", "1234", "--layout", layout]
    out = folder / f"{layout}-invalid.jsonl"
    assert main([*common, "records", *where, "--status", "invalid", "--limit", "50", "--out", str(out)]) == 0
    invalid = [json.loads(line) for line in out.read_text().splitlines()]
    assert invalid and {r["status"] for r in invalid} == {"invalid"}
    assert RAW not in out.read_text()
    rejected = folder / f"{layout}-rejected.csv"
    assert main([*common, "records", *where, "--status", "rejected", "--out", str(rejected)]) == 0
    rows = list(csv.DictReader(rejected.open()))
    assert list(rows[0]) == RECORDS.names and {r["status"] for r in rows} == {"rejected"}
    someone = rows[0]["record_identifier"]
    raw = next(email for email in DEMO_EMAILS if digest(email) == someone)
    capsys.readouterr()
    assert main([*common, "records", *where, "--search", raw, "--limit", "100"]) == 0
    shown = capsys.readouterr().out
    assert someone[:40] in shown and raw not in shown
    runs = folder / f"{layout}-runs.parquet"
    assert main([*common, "runs", *where, "--out", str(runs)]) == 0
    table = pq.read_table(runs)
    assert table.schema == RUNS and table.num_rows >= 3
    for run in table.to_pylist():
        assert run["records"] == run["succeeded"] + run["failed"] + run["aborted"] > 0
        if run["invalid"] is None:  # hightouch: the run's changelog rows have expired
            assert run["rejected"] is None
        else:
            assert run["failed"] == run["rejected"] + run["invalid"]
    capsys.readouterr()
    assert main([*common, "runs", *where, "--limit", "2", "--offset", "1"]) == 0
    listed = capsys.readouterr().out.strip().splitlines()
    assert listed[0].split()[:3] == ["sync_id", "sync_run_id", "started_at"] and len(listed) == 4
