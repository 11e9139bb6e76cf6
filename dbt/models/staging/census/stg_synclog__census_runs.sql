{{ config(enabled=synclog.synclog_has_layout('census')) }}
{#- Every census run: the finished ones synclog_runs holds, and runs with log rows but no row
    there yet. Status, start and finish as `synclog runs` shows them: synclog_runs' where it has a
    row, else implied by the records (failed when it aborted records not flagged, partial when
    some records not flagged succeeded) from its first batch's start to its last batch's
    completion. Counts are of the log rows kept, by outcome. -#}
with counted as (
    select
        sync_id,
        sync_run_id,
        min(batch_started_at) as first_batch_at,
        max(synced_at) as last_batch_at,
        count(*) as kept_rows,
        count(case when outcome in ('succeeded', 'rejected') then 1 end) as attempted,
        count(case when outcome = 'succeeded' then 1 end) as succeeded,
        count(case when outcome = 'rejected' then 1 end) as rejected,
        count(case when outcome = 'aborted' then 1 end) as aborted,
        count(case when invalid_reason = 'NULL' then 1 end) as invalid_null,
        count(case when invalid_reason = 'DUPLICATE' then 1 end) as invalid_duplicate,
        count(case when tracked_status = 'aborted' then 1 end) as tracked_aborted,
        count(case when tracked_status = 'succeeded' then 1 end) as tracked_succeeded
    from {{ ref('stg_synclog__census_records') }}
    group by sync_id, sync_run_id
),

ended as (
    select sync_id, sync_run_id, status, started_at, finished_at
    from {{ source('synclog_census', 'synclog_runs') }}
)

select
    'census' as layout,
    coalesce(e.sync_id, c.sync_id) as sync_id,
    coalesce(e.sync_run_id, c.sync_run_id) as sync_run_id,
    coalesce(
        e.status,
        case when c.tracked_aborted = 0 then 'succeeded' when c.tracked_succeeded > 0 then 'partial' else 'failed' end
    ) as run_status,
    coalesce(e.started_at, c.first_batch_at) as started_at,
    coalesce(e.finished_at, c.last_batch_at) as finished_at,
    coalesce(c.kept_rows, 0) as kept_rows,
    coalesce(c.kept_rows, 0) as planned,
    coalesce(c.attempted, 0) as attempted,
    coalesce(c.succeeded, 0) as succeeded,
    coalesce(c.rejected, 0) as rejected,
    coalesce(c.aborted, 0) as aborted,
    coalesce(c.invalid_null, 0) as invalid_null,
    coalesce(c.invalid_duplicate, 0) as invalid_duplicate
from counted as c
full outer join ended as e on e.sync_id = c.sync_id and e.sync_run_id = c.sync_run_id
