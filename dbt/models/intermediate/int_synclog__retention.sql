{#- Per layout and sync, the retention horizon (docs/analysts/dbt.md): retained_since, the UTC day
    of the sync's oldest kept log row, when the layout's runs hold a run of the sync that started
    before that day (retention removed rows before it); NULL when the log holds the sync's rows
    from its first run on. -#}
with oldest as (
    select layout, sync_id, min({{ synclog.synclog_day('batch_started_at') }}) as oldest_day
    from {{ ref('int_synclog__records') }}
    group by layout, sync_id
),

first_runs as (
    select layout, sync_id, min({{ synclog.synclog_day('started_at') }}) as first_day
    from {{ ref('int_synclog__layout_runs') }}
    group by layout, sync_id
)

select
    f.layout,
    f.sync_id,
    case when f.first_day < o.oldest_day then o.oldest_day end as retained_since
from first_runs as f
left join oldest as o on o.layout = f.layout and o.sync_id = f.sync_id
