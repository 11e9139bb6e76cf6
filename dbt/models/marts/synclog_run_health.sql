{#- How healthy was each run? One row per run of each layout (docs/analysts/dbt.md): the status
    `synclog runs` shows, start, finish and duration, records by the destination's outcome
    (flagged ones too), the flagged ones apart, the rejection rate, and whether the run is past
    the retention horizon. -#}
select
    {{ synclog.synclog_key(['layout', 'sync_id', 'sync_run_id']) }} as run_key,
    layout,
    sync_id,
    sync_run_id,
    run_status,
    started_at,
    finished_at,
    {{ dbt.datediff('started_at', 'finished_at', 'second') }} as duration_seconds,
    planned,
    attempted,
    succeeded,
    rejected,
    aborted,
    invalid_null,
    invalid_duplicate,
    cast(rejected as {{ synclog.synclog_type_double() }}) / nullif(attempted, 0) as rejection_rate,
    past_retention
from {{ ref('int_synclog__runs') }}
