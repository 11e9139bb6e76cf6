{{ config(enabled=synclog.synclog_has_layout('hightouch')) }}
{#- hightouch_audit.sync_changelog in the package's shape: the status in synclog's tracking
    vocabulary (a failure with an identifier check's message is invalid, any other rejected), as
    `synclog records` maps it. operation holds the op_type; membership: removed takes the row out
    of the model, added and changed put it in, whatever the destination answered (the snapshot's
    meaning). The changelog has only the batch's start. -#}
select
    'hightouch' as layout,
    sync_id,
    sync_run_id,
    row_id as record_identifier,
    op_type as operation,
    case
        when status = 'succeeded' then 'succeeded'
        when status = 'aborted' then 'aborted'
        when failure_reason in ({{ synclog.synclog_null_message() }}, {{ synclog.synclog_duplicate_message() }})
            then 'invalid'
        else 'rejected'
    end as status,
    status as layout_status,
    failure_reason as status_message,
    case
        when failure_reason = {{ synclog.synclog_null_message() }} then 'NULL'
        when failure_reason = {{ synclog.synclog_duplicate_message() }} then 'DUPLICATE'
    end as invalid_reason,
    case when op_type = 'removed' then 'out' else 'in' end as membership,
    batch_started_at,
    batch_started_at as synced_at,
    fields as payload
from {{ source('synclog_hightouch', 'sync_changelog') }}
