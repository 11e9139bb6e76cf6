"""The writer: validate record results, flag invalid records, and load every enabled layout."""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable, Iterator, Sequence, Set
from contextlib import ExitStack
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from types import TracebackType

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql.types import StructType

from synclog.batches import Batch, as_frame
from synclog.canonical import canonical_frame, flag_repeated, repeated_batches
from synclog.config import Config
from synclog.errors import ConfigError, InputError, TargetError, first_line
from synclog.layouts.base import LayoutContext, Load, Phase
from synclog.layouts.registry import layout
from synclog.model import Run, RunStatus
from synclog.naming import Relation
from synclog.notices.notify import Notices
from synclog.plugins.manager import payload_hooks, registry
from synclog.privacy import PayloadPolicy
from synclog.queued import adopt
from synclog.records import check_columns
from synclog.results import RunResult, WriteResult
from synclog.retention import CleanupResult, cleanup
from synclog.spark import require_reachable, spark_session
from synclog.storage.runstore import Pending, RunStore, Written
from synclog.storage.sweep import sweep
from synclog.targets.base import Target
from synclog.targets.connector import Connector
from synclog.targets.keys import Keys, RunBatches, load_keys
from synclog.targets.tables import TableSpec
from synclog.urls import TargetURL
from synclog.write_job import JobResult, StagedRows, run_write_job

Progress = Callable[[str], None]


@dataclass(frozen=True)
class _Staged:
    """A batch load the write's job stages: its table, as the target stores it, and its stage."""

    table: TableSpec
    spec: TableSpec
    stage: Relation
    rows: StagedRows


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
        self.store = RunStore(self.config.storage)
        self.notices = Notices(self.config, self.progress)
        """Alert notices and OpenLineage events of the runs written (`[notices]`, `alerts`)."""
        self._ensured: set[TableSpec] = set()
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
        started = time.perf_counter()
        frame, schema = as_frame(records, lambda: self.spark)
        return self._write_frame(run, frame, schema, started)

    def _write_frame(self, run: Run, frame: DataFrame, schema: StructType, started: float) -> WriteResult:
        """`write` of record results as a Spark frame of `schema`, in place; `started` is when
        the write began (`time.perf_counter`)."""
        self.layouts(run.sync_id)
        check_columns(schema)
        policy = self.policy(run.sync_id)
        transform = policy.prepare(run.sync_id, payload_hooks())
        run = _redacted(run, policy)
        first = not self.store.has(run)
        if first:
            self._admit(run)
        pattern = self.config.sync(run.sync_id).error_code_pattern
        canonical = canonical_frame(run, frame, datetime.now(UTC), transform, pattern, schema)
        passes: dict[str, float] = {}
        waiting = self.store.pending_of(run)
        written, loaded = self._write_once(run, canonical, passes)
        if first:
            self.notices.started(self, run)
        if loaded is not None and waiting:
            rest = sorted(set(waiting.batches) - set(written.batches))
            more = self._load_or_keep(run, rest, finished=False, passes=passes)
            loaded = None if more is None else {**loaded, **more}
        seconds = time.perf_counter() - started
        return WriteResult(written.statuses, loaded or {}, seconds, loaded is None, passes)

    def _write_once(
        self, run: Run, canonical: DataFrame, passes: dict[str, float]
    ) -> tuple[Written, dict[str, int] | None]:
        """The write's one job, then its swaps and the loads its tasks could not stage.

        Returns what was kept and the rows loaded per table; None when the target failed and
        the batches wait in the run store for `flush`.
        """
        started = time.perf_counter()
        ctx = LayoutContext(run, canonical, self.connector.capabilities)
        try:
            staged = self._open_stages(run, ctx)
        except TargetError as exc:
            written = self._keep_only(run, canonical, passes)
            self._keep(run, written.batches, finished=False, error=exc)
            return written, None
        try:
            written, result = self._kept_job(run, canonical, [s.rows for s in staged])
        except BaseException as exc:
            outage = self._release(staged, exc)
            if outage is None:
                raise
            written = self._keep_only(run, canonical, passes)
            self._keep(run, written.batches, finished=False, error=outage)
            return written, None
        passes["validate, store and stage"] = time.perf_counter() - started
        done = {s.table for s in staged}
        try:
            loaded = self._swap(staged, result.stages, passes, _carried(run, written.batches))
            records = self.store.read(self.spark, run, written.batches)
            loaded.update(self._load(run, records, Phase.BATCHES, passes, skip=done, batches=written.batches))
        except TargetError as exc:
            self._release(staged, None)
            self._keep(run, written.batches, finished=False, error=exc)
            return written, None
        return written, loaded

    def _open_stages(self, run: Run, ctx: LayoutContext) -> list[_Staged]:
        """A staging relation and a task-side writer for each batch load the write's job can stage."""
        target = self.target
        stages = target.stages()
        if stages is None:
            return []
        loads = list(self._batch_loads(run, ctx))  # every table ensured before any stage exists
        staged: list[_Staged] = []
        try:
            for load in loads:
                columns = load.rows.projection_of(ctx.records)
                if columns is None or load.scope:
                    continue
                spec = target.table_spec(load.table)
                stage = stages.open_stage(spec)
                writer = stages.stage_writer(stage, spec)
                if writer is None:
                    stages.release_stage(stage)
                    continue
                staged.append(_Staged(load.table, spec, stage, StagedRows(columns, writer)))
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
        carried: Sequence[RunBatches],
    ) -> dict[str, int]:
        """Finish each stage the job filled, swap it into its table in place of the rows of the
        batches `carried`, release it."""
        loaded: dict[str, int] = {}
        target = self.target
        stages = target.stages()
        if stages is None:  # nothing was staged
            return loaded
        while staged:
            item = staged.pop(0)
            done = reports.pop(0)
            started = time.perf_counter()
            try:
                count = stages.load_staged(item.stage, item.spec, done)
                stages.swap_staged(
                    item.spec, item.stage, count, Keys.of_batches(item.spec.replace_key, carried)
                )
            finally:
                stages.release_stage(item.stage)
            relation = str(target.relation(item.table, item.table.view))
            loaded[relation] = count
            passes[f"load {relation}"] = passes.get(f"load {relation}", 0.0) + time.perf_counter() - started
            self.progress(f"  {relation}: {count:,} rows")
        return loaded

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

    def _keep_only(self, run: Run, canonical: DataFrame, passes: dict[str, float]) -> Written:
        """The write's job without stages: validate and keep the batches (the target is down)."""
        started = time.perf_counter()
        written, _ = self._kept_job(run, canonical, [])
        passes["validate and store"] = time.perf_counter() - started
        return written

    def _kept_job(
        self, run: Run, canonical: DataFrame, stages: list[StagedRows]
    ) -> tuple[Written, JobResult]:
        """Run the write's job and commit its run-store files; remove them when the job fails."""
        folder = self.store.begin_write(run)
        try:
            types = self._needs_payload_schema(run)
            result = run_write_job(canonical, self.store.writer(folder), stages, payload_types=types)
        except BaseException:
            self.store.abort_write(folder)
            raise
        return self.store.commit_write(run, result.store), result

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
        return self._finish(run, {})

    def _finish(self, run: Run, passes: dict[str, float]) -> RunResult:
        run = _redacted(run, self.policy(run.sync_id))
        if self.store.state(run) is None:
            self._admit(run)
        flagged = self._flag_repeated(run)
        waiting = self.store.pending_of(run)
        batches = sorted({*flagged, *(waiting.batches if waiting else ())})
        statuses = self.store.statuses(run)  # before the load forgets the run
        accepted = self.store.accepted(run)
        if run.status is RunStatus.FAILED and accepted:
            run = replace(run, status=RunStatus.PARTIAL)
        loaded = self._load_or_keep(run, batches, finished=True, passes=passes)
        self.notices.finished(self, run, statuses, accepted)
        return RunResult(statuses, loaded or {}, pending=loaded is None)

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
            self._keep_only(run, flag_repeated(records, identifiers), {})
        return repeated

    def write_run(self, run: Run, records: Batch) -> WriteResult:
        """Log a whole, finished run in one call: `write`, then `finish` (`records` as for `write`)."""
        started = time.perf_counter()
        result = self.write(run, records)
        passes = dict(result.passes)
        ended = self._finish(run, passes)
        loaded = {**result.loaded, **ended.loaded}
        return WriteResult(result.statuses, loaded, time.perf_counter() - started, ended.pending, passes)

    def flush(self) -> list[Pending]:
        """Load what earlier writes kept because the target was down, and what `BackgroundLog`s
        of processes that are gone left queued, oldest run first; return what is still kept. A run
        a layout refuses (an InputError: it started before the run its sync's hightouch snapshot
        holds) stays kept, with the reason (`Pending.refused`)."""
        for pending in self.store.all_pending():
            try:
                if pending.queued:
                    adopt(self, pending.run)
                waiting = self.store.pending_of(pending.run)
                if waiting is not None and not waiting.queued:
                    self._load_or_keep(waiting.run, waiting.batches, finished=waiting.finished)
            except InputError as exc:
                self.progress(f"warning: run {pending.run.sync_run_id} of sync {pending.run.sync_id}: {exc}")
        return self.store.all_pending()

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
        run: Run,
        batches: Sequence[int],
        *,
        finished: bool,
        passes: dict[str, float] | None = None,
    ) -> dict[str, int] | None:
        """Load `batches` (and the run-level tables once `finished`); when the target fails (a
        TargetError: an outage), keep them in the run store for `flush` and return None, so the
        sync itself never fails. Any other error is not an outage and is raised.
        Each table load's seconds are added to `passes`."""
        passes = {} if passes is None else passes
        try:
            loaded = {}
            if batches:
                records = self.store.read(self.spark, run, batches)
                loaded.update(self._load(run, records, Phase.BATCHES, passes, batches=batches))
            self.store.clear_pending(run)
            if finished:
                try:
                    self._admit(run)
                    loaded.update(self._load(run, self.store.read(self.spark, run), Phase.RUN, passes))
                except InputError as exc:  # refused: the run stays whole in the store, for flush
                    self.store.mark_pending(run, (), finished=True, refused=str(exc))
                    raise
                self.store.drop(run)
            return loaded
        except TargetError as exc:
            self._keep(run, batches, finished=finished, error=exc)
            return None

    def _keep(self, run: Run, batches: Sequence[int], *, finished: bool, error: TargetError) -> None:
        """The target failed (an outage): keep `batches` in the run store for `flush`, or raise
        where `keep_on_target_failure` is off."""
        if not self.config.keep_on_target_failure:
            raise error
        self._forget_connection()
        kept = self.store.mark_pending(run, batches, finished=finished)
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

    def _load(
        self,
        run: Run,
        records: DataFrame,
        phase: Phase,
        passes: dict[str, float],
        skip: Set[TableSpec] = frozenset(),
        batches: Sequence[int] = (),
    ) -> dict[str, int]:
        """Load each table of each layout's loads of `phase` but those in `skip`, each in place of
        the rows it replaces: its scope, its rows' keys, or those of the `batches` written."""
        settings = self.config.sync(run.sync_id)
        loaded: dict[str, int] = {}
        with ExitStack() as reads:

            def previous(table: TableSpec) -> DataFrame | None:
                if not settings.table(table.view or table.name).enabled:
                    return None
                return reads.enter_context(self.target.read_rows(table, run.sync_id, self.spark))

            types = self.store.payload_schema(run) if phase is Phase.RUN else None
            ctx = LayoutContext(run, records, self.target.capabilities, previous, types)
            for name in self.layouts(run.sync_id):
                for load in phase.loads(layout(name), ctx):
                    table = load.table
                    if table in skip or not settings.table(table.view or table.name).enabled:
                        continue
                    self._ensure(table)
                    relation = str(self.target.relation(table, table.view))
                    digest = load.rows.digest
                    if digest is not None and table.run_metadata and self._loaded.get(relation) == digest:
                        continue  # the same metadata rows as this table's last load: it holds them
                    started = time.perf_counter()
                    keys = load_keys(table, load.rows, load.scope, _carried(run, batches))
                    loaded[relation] = self.target.replace_rows(table, load.rows, keys)
                    step = f"{phase.value} {relation}"
                    passes[step] = passes.get(step, 0.0) + time.perf_counter() - started
                    if digest is not None:
                        self._loaded[relation] = digest
                    self.progress(f"  {relation}: {loaded[relation]:,} rows")
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


def _redacted(run: Run, policy: PayloadPolicy) -> Run:
    """`run` with its error message redacted as the policy redacts status messages."""
    return replace(run, error=policy.redact_message(run.error)) if run.error else run
