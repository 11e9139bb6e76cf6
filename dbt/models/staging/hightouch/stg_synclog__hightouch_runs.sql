{{ config(enabled=synclog.synclog_has_layout('hightouch')) }}
{#- hightouch_audit.sync_runs, its counts summed over add / change / remove (planned, attempted,
    succeeded, failed: by the destination's outcome, flagged records too); a failed run that
    succeeded records is partial, as `synclog runs` shows it. The flagged records are counted
    from the changelog rows kept, per sync and run. -#}
{%- set total = {} -%}
{%- for stage in ['planned', 'attempted', 'succeeded', 'failed'] -%}
    {%- do total.update({stage: '(r.num_' ~ stage ~ '_add + r.num_' ~ stage ~ '_change + r.num_' ~ stage ~ '_remove)'}) -%}
{%- endfor %}
with flagged as (
    select
        sync_id,
        sync_run_id,
        count(*) as kept_rows,
        count(case when invalid_reason = 'NULL' then 1 end) as invalid_null,
        count(case when invalid_reason = 'DUPLICATE' then 1 end) as invalid_duplicate
    from {{ ref('stg_synclog__hightouch_records') }}
    group by sync_id, sync_run_id
)

select
    'hightouch' as layout,
    r.sync_id,
    r.sync_run_id,
    case when r.status = 'failed' and {{ total['succeeded'] }} > 0 then 'partial' else r.status end as run_status,
    r.started_at,
    r.finished_at,
    coalesce(f.kept_rows, 0) as kept_rows,
    {{ total['planned'] }} as planned,
    {{ total['attempted'] }} as attempted,
    {{ total['succeeded'] }} as succeeded,
    {{ total['failed'] }} as rejected,
    {{ total['planned'] }} - {{ total['attempted'] }} as aborted,
    coalesce(f.invalid_null, 0) as invalid_null,
    coalesce(f.invalid_duplicate, 0) as invalid_duplicate
from {{ source('synclog_hightouch', 'sync_runs') }} as r
left join flagged as f on f.sync_id = r.sync_id and f.sync_run_id = r.sync_run_id
