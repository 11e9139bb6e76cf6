{{ config(enabled=synclog.synclog_has_layout('census')) }}
{#- Census keeps no runs: a run is its records, from its first batch's start to its last batch's
    completion, failed when it aborted records (as `synclog runs` counts it). Planned counts every
    record; attempted all but the aborted ones (invalid records count as attempted and failed,
    as in Hightouch's sync_runs). -#}
select
    'census' as layout,
    sync_id,
    sync_run_id,
    min(batch_started_at) as started_at,
    max(synced_at) as finished_at,
    case when count(case when status = 'aborted' then 1 end) > 0 then 'failed' else 'succeeded' end
        as run_status,
    count(*) as planned,
    count(case when status <> 'aborted' then 1 end) as attempted,
    count(case when status = 'succeeded' then 1 end) as succeeded,
    count(case when status = 'rejected' then 1 end) as rejected,
    count(case when invalid_reason = 'NULL' then 1 end) as invalid_null,
    count(case when invalid_reason = 'DUPLICATE' then 1 end) as invalid_duplicate,
    count(case when status = 'aborted' then 1 end) as aborted
from {{ ref('stg_synclog__census_records') }}
group by sync_id, sync_run_id
