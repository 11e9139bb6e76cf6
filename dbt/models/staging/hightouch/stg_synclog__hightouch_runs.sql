{{ config(enabled=synclog.synclog_has_layout('hightouch')) }}
{#- hightouch_audit.sync_runs, its counts summed over add / change / remove. Invalid records
    (which sync_runs counts by the destination's outcome) are counted from the changelog rows
    still kept (retention may have removed them: then NULL, and so is rejected) and taken out of
    the destination's counts, as `synclog runs` counts them. -#}
{%- set total = {} -%}
{%- for stage in ['planned', 'attempted', 'succeeded', 'failed'] -%}
    {%- do total.update({stage: '(r.num_' ~ stage ~ '_add + r.num_' ~ stage ~ '_change + r.num_' ~ stage ~ '_remove)'}) -%}
{%- endfor %}
with invalid as (
    select
        sync_run_id,
        count(case when invalid_reason = 'NULL' then 1 end) as invalid_null,
        count(case when invalid_reason = 'DUPLICATE' then 1 end) as invalid_duplicate,
        count(case when invalid_reason is not null and layout_status = 'succeeded' then 1 end) as invalid_succeeded,
        count(case when invalid_reason is not null and layout_status = 'failed' then 1 end) as invalid_failed,
        count(case when invalid_reason is not null and layout_status = 'aborted' then 1 end) as invalid_aborted
    from {{ ref('stg_synclog__hightouch_records') }}
    group by sync_run_id
)

select
    'hightouch' as layout,
    r.sync_id,
    r.sync_run_id,
    r.started_at,
    r.finished_at,
    r.status as run_status,
    {{ total['planned'] }} as planned,
    {{ total['attempted'] }} + coalesce(i.invalid_aborted, 0) as attempted,
    {{ total['succeeded'] }} - coalesce(i.invalid_succeeded, 0) as succeeded,
    {{ total['failed'] }} - i.invalid_failed as rejected,
    i.invalid_null,
    i.invalid_duplicate,
    {{ total['planned'] }} - {{ total['attempted'] }} - coalesce(i.invalid_aborted, 0) as aborted
from {{ source('synclog_hightouch', 'sync_runs') }} as r
left join invalid as i on i.sync_run_id = r.sync_run_id
