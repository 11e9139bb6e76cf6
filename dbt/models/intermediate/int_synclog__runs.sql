{#- Every run with the retention horizon applied (docs/analysts/dbt.md): past_retention when it
    started before its sync's retained_since; the counts taken from log rows (census: all of them;
    hightouch: the flagged ones) are NULL for a run past retention none of whose rows are kept. -#}
with runs as (
    select
        r.*,
        coalesce({{ synclog.synclog_day('r.started_at') }} < h.retained_since, false) as past_retention
    from {{ ref('int_synclog__layout_runs') }} as r
    left join {{ ref('int_synclog__retention') }} as h on h.layout = r.layout and h.sync_id = r.sync_id
)

select
    layout,
    sync_id,
    sync_run_id,
    run_status,
    started_at,
    finished_at,
    {%- for count in ['planned', 'attempted', 'succeeded', 'rejected', 'aborted'] %}
    case when past_retention and kept_rows = 0 and layout = 'census' then null else {{ count }} end as {{ count }},
    {%- endfor %}
    {%- for count in ['invalid_null', 'invalid_duplicate'] %}
    case when past_retention and kept_rows = 0 then null else {{ count }} end as {{ count }},
    {%- endfor %}
    past_retention
from runs
