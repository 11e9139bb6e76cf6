{#- Why did the destination reject records, and what is the most common reason? Per layout, sync,
    day (UTC, of the batch's start) and reason: the destination's error code (as synclog stored it;
    for older rows the message's part before the first ':') with the full message kept. Only the
    destination's rejections: records failing synclog's identifier checks and records a dying run
    never attempted are not here (see synclog_run_health). -#}
with rejected as (
    select
        layout,
        sync_id,
        {{ synclog.synclog_day('batch_started_at') }} as rejected_on,
        error_code,
        status_message,
        synced_at
    from {{ ref('int_synclog__records') }}
    where status = 'rejected'
)

select
    {{ synclog.synclog_key(['layout', 'sync_id', 'rejected_on', 'error_code', 'status_message']) }}
        as rejection_key,
    layout,
    sync_id,
    rejected_on,
    error_code,
    status_message,
    count(*) as records,
    min(synced_at) as first_rejected_at,
    max(synced_at) as last_rejected_at
from rejected
group by layout, sync_id, rejected_on, error_code, status_message
