"""A sync engine that a loader serves, for the loader's faults (`harness.faults`): it queues one
run's batches through a `BackgroundLog` and exits, without Spark, whatever the loader does.

    python fault_engine.py CONFIG RUN_JSON COUNT BATCHES PAUSE_S
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path

from synclog import BackgroundLog, Run
from synclog.config import Config
from synclog_testing.factories import RECORD_COLUMNS, record_rows


def main() -> None:
    config, run_json, count, batches, pause = sys.argv[1:6]
    run = Run.from_dict(json.loads(run_json))
    rows = [
        dict(zip(RECORD_COLUMNS, r, strict=True))
        for r in record_rows(run, count=int(count), batches=int(batches))
    ]
    with BackgroundLog.open(None, Config.load(Path(config))) as log:
        if not log.served:
            raise SystemExit("no loader serves this engine")
        print("served", flush=True)  # the driver's clock for a loader's kill starts now
        for number in range(int(batches)):
            log.write(run, [r for r in rows if r["batch_number"] == number])
            time.sleep(float(pause))
        log.finish(run)


if __name__ == "__main__":
    main()
