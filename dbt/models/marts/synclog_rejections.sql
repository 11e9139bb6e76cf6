{#- Why did the destination reject records, and what is the most common reason? Per layout, sync,
    UTC day of the batch's start, error code and message (docs/analysts/dbt.md): the rows whose
    outcome is rejected, flagged ones too (aborted rows were never sent). -#}
with rejected as (
    select
        layout,
        sync_id,
        {{ synclog.synclog_day('batch_started_at') }} as rejected_on,
        error_code,
        status_message,
        invalid_reason,
        synced_at
    from {{ ref('int_synclog__records') }}
    where outcome = 'rejected'
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
    count(invalid_reason) as flagged_records,
    min(synced_at) as first_rejected_at,
    max(synced_at) as last_rejected_at
from rejected
group by layout, sync_id, rejected_on, error_code, status_message
