{{ config(enabled=synclog.synclog_has_layout('hightouch')) }}
{#- hightouch_audit.sync_changelog in the package's shape: the status in synclog's tracking
    vocabulary (flagged by an identifier check is invalid, whatever the destination said; a
    failure is rejected; a row that left the model with nothing sent has none), as
    `synclog records` maps it; layout_status keeps the destination's outcome. operation holds the op_type; membership: removed takes the row out
    of the model, added and changed put it in, whatever the destination answered (the snapshot's
    meaning). The changelog has only the batch's start. -#}
select
    'hightouch' as layout,
    sync_id,
    sync_run_id,
    row_id as record_identifier,
    op_type as operation,
    case
        when invalid_reason is not null then 'invalid'
        when status = 'succeeded' then 'succeeded'
        when status = 'aborted' then 'aborted'
        when status = 'failed' then 'rejected'
    end as status,
    status as layout_status,
    failure_reason as status_message,
    invalid_reason,
    coalesce(error_code, case when status = 'failed' then {{ synclog.synclog_error_code('failure_reason') }} end)
        as error_code,
    case when op_type = 'removed' then 'out' else 'in' end as membership,
    batch_started_at,
    batch_started_at as synced_at,
    fields as payload
from {{ source('synclog_hightouch', 'sync_changelog') }}
