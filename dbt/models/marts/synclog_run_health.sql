{#- Per run: planned / attempted / succeeded / rejected / invalid (NULL, DUPLICATE) / aborted, the
    rejection rate (the destination's rejections over the records attempted), started / finished
    and duration: what hightouch's sync_runs holds, computed the same way for census. -#}
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
    invalid_null,
    invalid_duplicate,
    aborted,
    cast(rejected as {{ synclog.synclog_type_double() }}) / nullif(attempted, 0) as rejection_rate
from {{ ref('int_synclog__runs') }}
