"""The writer: validate record results, flag invalid records, and load every enabled layout."""

from __future__ import annotations

import contextlib
import time
from collections import Counter
from collections.abc import Callable, Iterator, Mapping, Sequence, Set
from contextlib import ExitStack
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from types import TracebackType

from pyspark.sql import Column, DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql.pandas.types import from_arrow_schema

from synclog.batches import Batch, Write, normalized
from synclog.canonical import WRITE, flag_repeated, repeated_batches
from synclog.config import Config, SyncSettings
from synclog.errors import ConfigError, InputError, SynclogError, TargetError, first_line
from synclog.layouts.base import LayoutContext, Load, Phase
from synclog.layouts.registry import layout
from synclog.load_merge import merged, staged_column
from synclog.model import Run, RunStatus
from synclog.naming import Relation
from synclog.notices.notify import Notices
from synclog.plugins.manager import payload_hooks, registry
from synclog.privacy import PayloadPolicy
from synclog.records import check_columns, violation_error
from synclog.results import RunResult, WriteResult
from synclog.retention import CleanupResult, cleanup
from synclog.spark import require_reachable, spark_session
from synclog.storage.queue import batch_numbers
from synclog.storage.run_state import RunStates
from synclog.storage.runstore import RunStore, Written
from synclog.storage.spool import Pending, Spool
from synclog.storage.store_task import RunKey
from synclog.storage.sweep import sweep
from synclog.targets.base import Target
from synclog.targets.connector import Connector
from synclog.targets.keys import Keys, RunBatches, load_keys
from synclog.targets.tables import TableSpec
from synclog.urls import TargetURL
from synclog.write_frames import Prepared, canonical_of
from synclog.write_job import JobResult, StagedRows, run_write_job

Progress = Callable[[str], None]


@dataclass(frozen=True)
class _Staged:
    """A table the write's job stages: the table, as the target stores it, its stage, and the
    runs whose rows it takes."""

    table: TableSpec
    spec: TableSpec
    stage: Relation
    rows: StagedRows
    runs: frozenset[RunKey]


@dataclass(frozen=True)
class _Refused:
    """Writes of a job whose records break a rule: the first rule each breaks, by position."""

    violations: dict[int, str]


class SyncLog:
    """Writes the record results of sync runs into a target's log tables.

    >>> with SyncLog.open("duckdb:///logs.duckdb") as log:
    ...     log.write(run, records)   # a Spark or pandas DataFrame, an Arrow table, a list of dicts

    A sync engine that must not wait on Spark or the warehouse logs through a `BackgroundLog`
    (`synclog.background`), which loads through a `SyncLog` behind it.
    """

    def __init__(
        self,
        target: Target | Connector,
        config: Config | None = None,
        spark: SparkSession | None = None,
        progress: Progress | None = None,
        policy: PayloadPolicy | None = None,
    ) -> None:
        self.connector = target if isinstance(target, Connector) else Connector.of(target)
        self.config = config or Config()
        self.policy_override = policy
        """A payload policy for every sync this log writes, instead of each sync's configured one."""
        self._spark = _reachable(spark, self.config) if spark is not None else None
        self.progress = progress or (lambda _message: None)
        states = RunStates(self.config.storage.child("runs"))
        self.store = RunStore(states)
        """Validated canonical batches of the runs in progress."""
        self.spool = Spool(states)
        """What of each run waits for the target after an outage (`flush`)."""
        self.notices = Notices(self.config, self.progress)
        """Alert notices and OpenLineage events of the runs written (`[notices]`, `alerts`)."""
        self._ensured: set[TableSpec] = set()
        self.jobs = 0
        """Spark jobs of writes run so far (one per `write_all`, more where a write was refused)."""
        self.loads: Counter[str] = Counter()
        """Loads (a stage swapped in, or rows replaced) made so far, per table."""
        self._loaded: dict[str, str] = {}
        """Per metadata table, the digest of the rows loaded last (loading them again is a no-op)."""

    @classmethod
    def open(
        cls,
        target: str | None = None,
        config: Config | None = None,
        spark: SparkSession | None = None,
        progress: Progress | None = None,
        policy: PayloadPolicy | None = None,
        read_only: bool = False,
        writes: bool = False,
    ) -> SyncLog:
        """Open the target named in `synclog.toml`, or given as a URL (DuckDB by default).

        A target that does not answer yet is no error while `keep_on_target_failure` holds:
        batches wait in the run store and every later write tries to connect again.
        `policy` replaces every sync's configured payload policy. `read_only` (for reads and
        retention) refuses a file-backed target whose file does not exist, with a ConfigError,
        instead of creating an empty database, and leaves `storage` as it is (only writers sweep
        what killed writers left there). `writes` starts Spark before the target is
        touched, so executors that cannot reach `storage` are refused first.
        """
        log = cls.configured(target, config, spark, progress, policy, read_only=read_only)
        log.begin(read_only=read_only, writes=writes)
        return log

    @classmethod
    def configured(
        cls,
        target: str | None = None,
        config: Config | None = None,
        spark: SparkSession | None = None,
        progress: Progress | None = None,
        policy: PayloadPolicy | None = None,
        *,
        read_only: bool = False,
    ) -> SyncLog:
        """The first half of `open`: the configuration read and the target's URL checked (a
        malformed one, or a missing file, fails here); storage, Spark and the target untouched."""
        config = config or Config.load()
        url, settings = config.resolve_target(target)
        settings = replace(settings, read_only=read_only)
        kind = registry().for_url(url)
        kind.check(url, settings)  # before Spark starts: a malformed or missing file fails at once
        return cls(Connector.for_type(kind, url, settings), config, spark, progress, policy)

    def begin(self, *, read_only: bool = False, writes: bool = False) -> None:
        """The second half of `open` (see there): sweep what killed writers left in `storage`
        (unless `read_only`), start Spark (`writes`), connect."""
        if not read_only:
            sweep(self.config.storage)  # what writers killed earlier left behind; reads leave it be
        if writes:
            self.spark  # noqa: B018 - refuses unreachable storage before the target is touched
        try:
            self.target  # noqa: B018 - connect now, so a wrong URL or password shows at once
        except TargetError as exc:
            if not self.config.keep_on_target_failure:
                raise
            self.progress(
                f"warning: {self.url} does not answer ({first_line(exc)}); "
                f"batches wait in {self.store.root} until it does"
            )

    @property
    def spark(self) -> SparkSession:
        """The Spark session writes run on: the one given, else the active one or a new one.

        Started on first use, so that reading, retention and a flush with nothing kept never
        start a JVM. Raises ConfigError when its executors cannot reach `storage`.
        """
        if self._spark is None:
            self._spark = _reachable(spark_session(), self.config)
        return self._spark

    @property
    def target(self) -> Target:
        """The target, connected (again) if it was not."""
        return self.connector.target

    @property
    def url(self) -> TargetURL:
        """Where the log tables go (known without connecting)."""
        return self.connector.url

    def write(self, run: Run, records: Batch) -> WriteResult:
        """Log one or more batches of `run`. A batch written again replaces its earlier copy.

        `records`: a Spark or pandas DataFrame, a pyarrow Table or RecordBatch, or a list of
        dicts, with the columns of `synclog.INPUT_SCHEMA` (see `synclog.batches`).
        One Spark job validates the records, keeps them in the run store and stages every load
        that can be staged by its tasks (`synclog.write_job`); the swaps follow only when no
        record broke a rule. Raises InputError, before anything reaches a log table, when
        `records` break the contract, and ConfigError when the sync's payload policy needs a
        key the environment lacks.
        """
        (result,) = self.write_all([Write(run, records)])
        if isinstance(result, InputError):
            raise result
        return result

    def write_all(self, writes: Sequence[Write]) -> list[WriteResult | InputError]:
        """`write` each of `writes` (of any runs of any syncs) in one go: one Spark job validates,
        keeps and stages them all, and each table takes one swap. What a loader calls for the
        batches many engines queued.

        Returns, in order, each write's result, or the InputError that refused it: a write whose
        records break the contract (nothing of it reaches a log table) refuses only itself, and
        the others are written without it. A ConfigError (a sync's layouts or payload policy
        cannot be written) is raised. Writes of one run hold different batches (else the later
        copy of a batch would not be known to replace the earlier one: write them apart)."""
        started = time.perf_counter()
        results: dict[int, WriteResult | InputError] = {}
        prepared: list[Prepared] = []
        for index, write in enumerate(writes):
            try:
                prepared.append(self._prepared(index, write))
            except InputError as exc:
                results[index] = exc
        admitted, firsts = self._admitted(prepared, results)
        if admitted:
            results.update(self._write_prepared(admitted, firsts, started))
        return [results[index] for index in range(len(writes))]

    def _prepared(self, index: int, write: Write) -> Prepared:
        """`write` checked (its columns, its sync's layouts and payload policy), ready for the job."""
        sync = write.run.sync_id
        self.layouts(sync)
        records = normalized(write.records)
        schema = records.schema if isinstance(records, DataFrame) else from_arrow_schema(records.schema)
        check_columns(schema)
        policy = self.policy(sync)
        transform = policy.prepare(sync, payload_hooks())
        batches = None if isinstance(records, DataFrame) else batch_numbers(records)
        pattern = self.config.sync(sync).error_code_pattern
        return Prepared(index, _redacted(write.run, policy), records, schema, batches, transform, pattern)

    def _admitted(
        self, prepared: list[Prepared], results: dict[int, WriteResult | InputError]
    ) -> tuple[list[Prepared], set[RunKey]]:
        """The writes whose runs the layouts take (asked at a run's first write: `_admit`; a run
        refused refuses each of its writes), and the runs whose first write this is."""
        refused: dict[RunKey, InputError] = {}
        firsts: set[RunKey] = set()
        for write in prepared:
            key = _key(write.run)
            if key in firsts or key in refused or self.store.has(write.run):
                continue
            try:
                self._admit(write.run)
                firsts.add(key)
            except InputError as exc:
                refused[key] = exc
        for write in prepared:
            if _key(write.run) in refused:
                results[write.index] = refused[_key(write.run)]
        return [w for w in prepared if _key(w.run) not in refused], firsts

    def _write_prepared(
        self, writes: list[Prepared], firsts: set[RunKey], started: float
    ) -> dict[int, WriteResult | InputError]:
        """The job, swaps and loads of `writes`; each write's result by its index. A write whose
        records break a rule is refused and the others are written again without it."""
        runs = {_key(w.run): w.run for w in writes}
        canonical = canonical_of(writes, lambda: self.spark, datetime.now(UTC))
        passes: dict[str, float] = {}
        waiting = {key: self.spool.of(run) for key, run in runs.items()}
        done = self._write_once(writes, runs, canonical, passes)
        if isinstance(done, _Refused):
            results: dict[int, WriteResult | InputError] = {}
            for position, found in done.violations.items():
                results[writes[position].index] = violation_error(found)
            rest = [w for position, w in enumerate(writes) if position not in done.violations]
            if rest:
                results.update(self._write_prepared(rest, firsts, started))
            return results
        written, loaded = done
        for key in runs.keys() & firsts:
            self.notices.started(self, runs[key])
        if loaded is not None:  # what an outage kept of these runs: loaded now, or marked done
            for key, pending in waiting.items():
                if pending is None:
                    continue
                left = sorted(set(pending.batches) - set(written[key].batches))
                more = self._load_or_keep([(runs[key], left)], finished=False, passes=passes)[key]
                loaded[key] = {**_dict(loaded[key]), **more} if isinstance(more, dict) else None
        seconds = time.perf_counter() - started
        return {
            w.index: WriteResult(
                written[_key(w.run)].counted(w.batches),
                (loaded or {}).get(_key(w.run)) or {},
                seconds,
                loaded is None or loaded.get(_key(w.run)) is None,
                passes,
            )
            for w in writes
        }

    def _write_once(
        self, writes: list[Prepared], runs: dict[RunKey, Run], canonical: DataFrame, passes: dict[str, float]
    ) -> _Refused | tuple[dict[RunKey, Written], dict[RunKey, dict[str, int] | None] | None]:
        """The write's one job, then its swaps and the loads its tasks could not stage.

        Returns the writes refused, or what was kept of each run and the rows loaded per table
        for each; None when the target failed and the batches wait in the run store for `flush`.
        """
        started = time.perf_counter()
        try:
            staged = self._open_stages(writes, runs, canonical)
        except TargetError as exc:
            return self._keep_only(runs, canonical, passes, exc)
        try:
            job = self._kept_job(runs, canonical, [s.rows for s in staged])
        except BaseException as exc:
            outage = self._release(staged, exc)
            if outage is None:
                raise
            return self._keep_only(runs, canonical, passes, outage)
        if isinstance(job, _Refused):
            self._release(staged, None)
            return job
        written, result = job
        passes["validate, store and stage"] = time.perf_counter() - started
        done = {s.table for s in staged}
        try:
            carried = {key: _carried(run, written[key].batches) for key, run in runs.items()}
            relations = self._swap(staged, result.stages, passes, carried)
            loaded: dict[RunKey, dict[str, int] | None] = {
                key: {rel: written[key].records for rel, holds in relations.items() if key in holds}
                for key in runs
            }
            parts = [
                (run, self.store.read(self.spark, run, written[key].batches), written[key].batches)
                for key, run in runs.items()
                if written[key].batches
            ]
            for key, more in self._load_many(parts, Phase.BATCHES, passes, skip=done).items():
                loaded[key] = {**(loaded[key] or {}), **more}
        except TargetError as exc:
            self._release(staged, None)
            for key, run in runs.items():
                self._keep(run, written[key].batches, finished=False, error=exc)
            return written, None
        return written, loaded

    def _open_stages(
        self, writes: list[Prepared], runs: dict[RunKey, Run], canonical: DataFrame
    ) -> list[_Staged]:
        """A staging relation and a task-side writer for each table whose loads the write's job can
        stage: one per table, whichever runs load it (`load_merge.staged_column`)."""
        target = self.target
        stages = target.stages()
        if stages is None:
            return []
        positions: dict[RunKey, list[int]] = {}
        for position, write in enumerate(writes):
            positions.setdefault(_key(write.run), []).append(position)
        loads: list[tuple[RunKey, Load]] = []
        for key, run in runs.items():  # every table ensured before any stage exists
            ctx = LayoutContext(run, canonical, self.connector.capabilities)
            loads += [(key, load) for load in self._batch_loads(run, ctx)]
        tables: dict[TableSpec, list[tuple[RunKey, tuple[Column, ...]]]] = {}
        for key, load in loads:
            columns = load.rows.projection_of(canonical)
            if columns is not None and not load.scope:
                tables.setdefault(load.table, []).append((key, columns))
        staged: list[_Staged] = []
        try:
            for table, parts in tables.items():
                spec = target.table_spec(table)
                stage = stages.open_stage(spec)
                writer = stages.stage_writer(stage, spec)
                if writer is None:
                    stages.release_stage(stage)
                    continue
                column = staged_column([(positions[key], columns) for key, columns in parts], len(writes))
                holds = frozenset(key for key, _ in parts)
                staged.append(_Staged(table, spec, stage, StagedRows(column, writer), holds))
        except BaseException as exc:
            self._release(staged, exc)
            raise
        return staged

    def _batch_loads(self, run: Run, ctx: LayoutContext) -> Iterator[Load]:
        """The batch loads of every layout of `run`'s sync into tables it enables, tables ensured."""
        settings = self.config.sync(run.sync_id)
        for name in self.layouts(run.sync_id):
            for load in layout(name).batch_rows(ctx):
                table = load.table
                if not settings.table(table.view or table.name).enabled:
                    continue
                self._ensure(table)
                yield load

    def _swap(
        self,
        staged: list[_Staged],
        reports: list[list[str]],
        passes: dict[str, float],
        carried: Mapping[RunKey, list[RunBatches]],
    ) -> dict[str, frozenset[RunKey]]:
        """Finish each stage the job filled, swap it into its table in place of the rows of the
        batches its runs `carried`, release it; each table swapped with the runs whose rows it took."""
        swapped: dict[str, frozenset[RunKey]] = {}
        target = self.target
        stages = target.stages()
        if stages is None:  # nothing was staged
            return swapped
        while staged:
            item = staged.pop(0)
            done = reports.pop(0)
            started = time.perf_counter()
            try:
                count = stages.load_staged(item.stage, item.spec, done)
                runs = [batches for key in sorted(item.runs) for batches in carried[key]]
                stages.swap_staged(item.spec, item.stage, count, Keys.of_batches(item.spec.replace_key, runs))
            finally:
                stages.release_stage(item.stage)
            relation = str(target.relation(item.table, item.table.view))
            self.loads[relation] += 1
            swapped[relation] = item.runs
            passes[f"load {relation}"] = passes.get(f"load {relation}", 0.0) + time.perf_counter() - started
            self.progress(f"  {relation}: {count:,} rows")
        return swapped

    def _release(self, staged: list[_Staged], failure: BaseException | None) -> TargetError | None:
        """Drop every stage in `staged`; the outage `failure` (a failed job) amounts to, if any.

        A stage that cannot be dropped because the target is gone is left to the target's
        sweep of orphaned stages (the next `ensure`). Rows the warehouse refused (the InputError
        of `raise_stage_failure`) are raised once every stage is dropped.
        """
        outage: TargetError | None = failure if isinstance(failure, TargetError) else None
        refused: InputError | None = None
        stages = self.connector.target.stages() if staged else None
        for item in staged:
            if stages is None:  # a target without stages staged nothing
                break
            if isinstance(failure, Exception) and outage is None and refused is None:
                try:
                    stages.raise_stage_failure(failure, item.spec)
                except TargetError as exc:
                    outage = exc
                except InputError as exc:
                    refused = exc
            with contextlib.suppress(TargetError):
                stages.release_stage(item.stage)
        staged.clear()
        if refused is not None:
            raise refused from None
        return outage

    def _keep_only(
        self, runs: dict[RunKey, Run], canonical: DataFrame, passes: dict[str, float], outage: TargetError
    ) -> _Refused | tuple[dict[RunKey, Written], None]:
        """The write's job without stages (the target is down): validate and keep the batches,
        each run's for `flush`."""
        started = time.perf_counter()
        job = self._kept_job(runs, canonical, [])
        if isinstance(job, _Refused):
            return job
        written, _ = job
        passes["validate and store"] = time.perf_counter() - started
        for key, run in runs.items():
            self._keep(run, written[key].batches, finished=False, error=outage)
        return written, None

    def _kept_job(
        self, runs: dict[RunKey, Run], canonical: DataFrame, stages: list[StagedRows]
    ) -> _Refused | tuple[dict[RunKey, Written], JobResult]:
        """Run the write's job and commit its run-store files; remove them when the job fails or
        a write is refused."""
        folders = {key: self.store.begin_write(run) for key, run in runs.items()}
        try:
            types = any(self._needs_payload_schema(run) for run in runs.values())
            self.jobs += 1
            result = run_write_job(canonical, self.store.writer(folders), stages, payload_types=types)
        except BaseException:
            for folder in folders.values():
                self.store.abort_write(folder)
            raise
        if result.violations:
            for folder in folders.values():
                self.store.abort_write(folder)
            return _Refused(result.violations)
        return self.store.commit_write(runs, result.store), result

    def finish(self, run: Run) -> RunResult:
        """Write what needs the whole run (run tables, snapshots, run metadata); forget the run.

        Call it once the run has ended, with `run.status`, `finished_at` and `error` filled in;
        a `failed` run some of whose records succeeded is logged `partial` (see `RunStatus`).
        Where the run was written by several writes, records whose identifier several batches
        hold are flagged DUPLICATE now (those batches kept and loaded again): a run logged batch
        by batch holds the flags a `write_run` of the same records holds, and a write's cost
        does not grow with the batches before it. Returns the run's records as counted and the
        rows loaded per table (`pending` when the target was down and the run was kept).
        """
        (result,) = self.finish_all([run])
        if isinstance(result, InputError):
            raise result
        return result

    def finish_all(
        self, runs: Sequence[Run], *, on_loaded: Callable[[int], None] | None = None
    ) -> list[RunResult | InputError]:
        """`finish` each of `runs` (of any syncs) in one go: the run-level rows their layouts
        build on the driver go to each table in one load. Returns, in order, each run's result,
        or the InputError of a run a layout refuses (it stays kept, see `flush`). Runs of one
        sync finish one after the other, in order (a run's snapshot is the next one's past).

        `on_loaded` is called with a run's position once the tables hold the run, before the run
        store forgets it: a loader takes the run's end out of its queue there, so that a loader
        stopped in between never finishes the run again without its records."""
        return self._finish_all(runs, {}, on_loaded)

    def _finish_all(
        self,
        runs: Sequence[Run],
        passes: dict[str, float],
        on_loaded: Callable[[int], None] | None = None,
    ) -> list[RunResult | InputError]:
        results: dict[int, RunResult | InputError] = {}
        for round_ in _one_per_sync(runs):
            results.update(self._finish_round({index: runs[index] for index in round_}, passes, on_loaded))
        return [results[index] for index in range(len(runs))]

    def _finish_round(
        self, runs: dict[int, Run], passes: dict[str, float], on_loaded: Callable[[int], None] | None
    ) -> dict[int, RunResult | InputError]:
        results: dict[int, RunResult | InputError] = {}
        ending: list[tuple[int, Run, list[int], dict[str, int], int]] = []
        for index, given in runs.items():
            run = _redacted(given, self.policy(given.sync_id))
            try:
                if not self.store.known(run):
                    self._admit(run)
            except InputError as exc:
                results[index] = exc
                continue
            flagged = self._flag_repeated(run)
            waiting = self.spool.of(run)
            batches = sorted({*flagged, *(waiting.batches if waiting else ())})
            statuses = self.store.statuses(run)  # before the load forgets the run
            accepted = self.store.accepted(run)
            if run.status is RunStatus.FAILED and accepted:
                run = replace(run, status=RunStatus.PARTIAL)
            ending.append((index, run, batches, statuses, accepted))
        positions = {_key(run): index for index, run, _, _, _ in ending}  # one run of a sync a round
        done_with = None if on_loaded is None else lambda run: on_loaded(positions[_key(run)])
        finished = self._load_or_keep(
            [(run, batches) for _, run, batches, _, _ in ending],
            finished=True,
            passes=passes,
            on_loaded=done_with,
        )
        for index, run, _, statuses, accepted in ending:
            done = finished[_key(run)]
            if isinstance(done, InputError):
                results[index] = done
                continue
            self.notices.finished(self, run, statuses, accepted)
            results[index] = RunResult(statuses, done or {}, pending=done is None)
        return results

    def _flag_repeated(self, run: Run) -> tuple[int, ...]:
        """Flag DUPLICATE the records of identifiers that several batches of the run hold, where
        the batches came from more than one write (one write counts them in its own job);
        return the batches flagged, kept again. A run whose writes' tasks reported its identifiers'
        hashes needs a Spark job only when some batches share one."""
        repeated = self.store.repeated_batches(run) if self.store.writes(run) > 1 else ()
        identifiers = self.store.identifiers(self.spark, run) if repeated != () else None
        if identifiers is None:
            return ()
        if repeated is None:
            repeated = tuple(sorted(repeated_batches(identifiers)))
        if repeated:
            records = self.store.read(self.spark, run, repeated)
            flagged = flag_repeated(records, identifiers)
            job = self._kept_job({_key(run): run}, flagged.withColumn(WRITE, F.lit(0)), [])
            if isinstance(job, _Refused):  # the run's own kept rows: they broke no rule when kept
                raise SynclogError(f"run {run.sync_run_id}: kept rows refused when flagged again")
        return repeated

    def write_run(self, run: Run, records: Batch) -> WriteResult:
        """Log a whole, finished run in one call: `write`, then `finish` (`records` as for `write`)."""
        started = time.perf_counter()
        result = self.write(run, records)
        passes = dict(result.passes)
        (ended,) = self._finish_all([run], passes)
        if isinstance(ended, InputError):
            raise ended
        loaded = {**result.loaded, **ended.loaded}
        return WriteResult(result.statuses, loaded, time.perf_counter() - started, ended.pending, passes)

    def flush(self, kept: Sequence[Pending] | None = None) -> list[Pending]:
        """Load what earlier writes kept because the target was down (`kept`: these runs only),
        oldest run first; return what is still kept. A run a layout refuses (an InputError: it
        started before the run its sync's hightouch snapshot holds) stays kept, with the reason
        (`Pending.refused`). What
        `BackgroundLog`s queued is the loader's (`synclog.loading`): `synclog flush` loads that
        too."""
        for pending in self.spool.every() if kept is None else kept:
            done = self._load_or_keep([(pending.run, pending.batches)], finished=pending.finished)
            refused = done[_key(pending.run)]
            if isinstance(refused, InputError):
                self.progress(
                    f"warning: run {pending.run.sync_run_id} of sync {pending.run.sync_id}: {refused}"
                )
        return self.spool.every()

    def _admit(self, run: Run) -> None:
        """Refuse (InputError) a run a layout of its sync cannot take, before anything of it is
        logged (`Layout.admit`); where the target does not answer, `finish` or `flush` decide."""
        try:
            for name in self.layouts(run.sync_id):
                layout(name).admit(run, self.target, self._ensure)
        except TargetError:
            return

    def _ensure(self, table: TableSpec) -> None:
        """Make `table` exist in the target (once per connection)."""
        if table not in self._ensured:
            self.target.ensure([table])
            self._ensured.add(table)

    def _load_or_keep(
        self,
        runs: Sequence[tuple[Run, Sequence[int]]],
        *,
        finished: bool,
        passes: dict[str, float] | None = None,
        on_loaded: Callable[[Run], None] | None = None,
    ) -> dict[RunKey, dict[str, int] | InputError | None]:
        """Load each run's `batches` (and its run-level tables once `finished`); when the target
        fails (a TargetError: an outage), keep them in the run store for `flush` (None for that
        run), so the sync itself never fails. A finished run a layout refuses stays kept, refused
        (its InputError). Any other error is not an outage and is raised.
        Each table load's seconds are added to `passes`; `on_loaded` is called with each finished
        run the tables hold, before the run store forgets it."""
        passes = {} if passes is None else passes
        loaded: dict[RunKey, dict[str, int] | InputError | None] = {_key(run): {} for run, _ in runs}
        try:
            parts = [
                (run, self.store.read(self.spark, run, batches), batches) for run, batches in runs if batches
            ]
            for key, more in self._load_many(parts, Phase.BATCHES, passes).items():
                loaded[key] = {**_dict(loaded[key]), **more}
            for run, _ in runs:
                self.spool.clear(run)
            if finished:
                admitted = []
                for run, _ in runs:
                    try:
                        self._admit(run)
                        admitted.append(run)
                    except InputError as exc:  # refused: the run stays whole in the store, for flush
                        self.spool.mark(run, (), finished=True, refused=str(exc))
                        loaded[_key(run)] = exc
                whole = [(run, self.store.read(self.spark, run), ()) for run in admitted]
                for key, more in self._load_many(whole, Phase.RUN, passes).items():
                    loaded[key] = {**_dict(loaded[key]), **more}
                for run in admitted:
                    if on_loaded is not None:
                        self.store.loaded(run)
                        on_loaded(run)
                    self.store.drop(run)
            return loaded
        except TargetError as exc:
            for run, batches in runs:
                if not isinstance(loaded[_key(run)], InputError):
                    self._keep(run, batches, finished=finished, error=exc)
                    loaded[_key(run)] = None
            return loaded

    def _keep(self, run: Run, batches: Sequence[int], *, finished: bool, error: TargetError) -> None:
        """The target failed (an outage): keep `batches` in the run store for `flush`, or raise
        where `keep_on_target_failure` is off."""
        if not self.config.keep_on_target_failure:
            raise error
        self._forget_connection()
        kept = self.spool.mark(run, batches, finished=finished)
        self.progress(
            f"warning: {self.url} failed ({first_line(error)}); kept {len(kept.batches)} "
            f"batch(es) of run {run.sync_run_id} in {self.store.root} for `synclog flush`"
        )

    def _forget_connection(self) -> None:
        """After an outage: connect afresh next time, and take nothing about the target for granted."""
        self.connector.reset()
        self._ensured.clear()
        self._loaded.clear()

    def _needs_payload_schema(self, run: Run) -> bool:
        """Whether a layout of `run`'s sync records the payload schema (the write's tasks compute it)."""
        return any(layout(name).needs_payload_schema for name in self.layouts(run.sync_id))

    def policy(self, sync_id: int) -> PayloadPolicy:
        """The payload policy `sync_id` is written with."""
        if self.policy_override is not None:
            return self.policy_override
        return self.config.sync(sync_id).policy

    def layouts(self, sync_id: int) -> tuple[str, ...]:
        """The layouts written for `sync_id`: the configured ones, else the target's default.

        Raises ConfigError when the target cannot hold a configured layout.
        """
        held = self.connector.capabilities.layouts
        chosen = self.config.sync(sync_id).layouts or held[:1]
        for name in chosen:
            if name not in held:
                raise ConfigError(
                    f"target {self.url} cannot hold the {name!r} layout (it holds: {', '.join(held)})"
                )
        return chosen

    def _load_many(
        self,
        parts: Sequence[tuple[Run, DataFrame, Sequence[int]]],
        phase: Phase,
        passes: dict[str, float],
        skip: Set[TableSpec] = frozenset(),
    ) -> dict[RunKey, dict[str, int]]:
        """Load each table of each layout's loads of `phase` for each run (with its `records`, of
        its `batches`) but those in `skip`, each in place of the rows it replaces (its scope, its
        rows' keys, or those of the batches): a table's loads of several runs as few loads as
        can be (`load_merge.merged`). The rows loaded per table, for each run."""
        loaded: dict[RunKey, dict[str, int]] = {_key(run): {} for run, _, _ in parts}
        carried = {_key(run): _carried(run, batches) for run, _, batches in parts}
        with ExitStack() as reads:
            tables: dict[TableSpec, list[tuple[Run, Load]]] = {}
            for run, records, _ in parts:
                settings = self.config.sync(run.sync_id)

                def previous(
                    table: TableSpec, settings: SyncSettings = settings, sync: int = run.sync_id
                ) -> DataFrame | None:
                    if not settings.table(table.view or table.name).enabled:
                        return None
                    return reads.enter_context(self.target.read_rows(table, sync, self.spark))

                types = self.store.payload_schema(run) if phase is Phase.RUN else None
                ctx = LayoutContext(run, records, self.target.capabilities, previous, types)
                for name in self.layouts(run.sync_id):
                    for load in phase.loads(layout(name), ctx):
                        table = load.table
                        if table not in skip and settings.table(table.view or table.name).enabled:
                            tables.setdefault(table, []).append((run, load))
            for table, loads in tables.items():
                self._ensure(table)
                relation = str(self.target.relation(table, table.view))
                for one in merged(table, loads):
                    digest = one.rows.digest
                    if digest is not None and table.run_metadata and self._loaded.get(relation) == digest:
                        continue  # the same metadata rows as this table's last load: it holds them
                    started = time.perf_counter()
                    runs = [batches for run, _ in one.runs for batches in carried[_key(run)]]
                    count = self.target.replace_rows(
                        table, one.rows, load_keys(table, one.rows, one.scope, runs)
                    )
                    self.loads[relation] += 1
                    step = f"{phase.value} {relation}"
                    passes[step] = passes.get(step, 0.0) + time.perf_counter() - started
                    if digest is not None:
                        self._loaded[relation] = digest
                    self.progress(f"  {relation}: {count:,} rows")
                    for run, given in one.runs:
                        loaded[_key(run)][relation] = count if given < 0 else given
        return loaded

    def cleanup(self, now: datetime | None = None) -> CleanupResult:
        """Remove expired rows from the framework's tables, per each sync's retention."""
        return cleanup(self.target, self.config, now or datetime.now(UTC))

    def close(self) -> None:
        """Wait (a bounded time) for notices still being delivered; close the target connection
        (the Spark session stays up)."""
        self.notices.close()
        self.connector.close()

    def __enter__(self) -> SyncLog:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()


def _carried(run: Run, batches: Sequence[int]) -> list[RunBatches]:
    """The batches of `run` a load carries, as the keys it replaces follow from them."""
    return [RunBatches(run.org_id, run.sync_id, run.sync_run_id, tuple(batches))] if batches else []


def _reachable(spark: SparkSession, config: Config) -> SparkSession:
    """`spark`, once it is known that its executors reach `storage` (else ConfigError)."""
    require_reachable(config.storage, spark, "storage")
    return spark


def _key(run: Run) -> RunKey:
    return (run.sync_id, run.sync_run_id)


def _dict(value: dict[str, int] | InputError | None) -> dict[str, int]:
    return value if isinstance(value, dict) else {}


def _one_per_sync(runs: Sequence[Run]) -> list[list[int]]:
    """The positions of `runs` in rounds that hold each sync at most once, in order."""
    rounds: list[list[int]] = []
    for index, run in enumerate(runs):
        after = max(
            (n + 1 for n, round_ in enumerate(rounds) for i in round_ if runs[i].sync_id == run.sync_id),
            default=0,
        )
        if after == len(rounds):
            rounds.append([])
        rounds[after].append(index)
    return rounds


def _redacted(run: Run, policy: PayloadPolicy) -> Run:
    """`run` with its error message redacted as the policy redacts status messages."""
    return replace(run, error=policy.redact_message(run.error)) if run.error else run
