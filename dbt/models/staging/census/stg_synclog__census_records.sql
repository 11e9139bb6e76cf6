{{ config(enabled=synclog.synclog_has_layout('census')) }}
{#- census.sync_log in the package's shape: one row per record of each batch, the status in
    synclog's tracking vocabulary (succeeded, rejected, invalid, aborted), as `synclog records`
    maps it; layout_status keeps the destination's outcome, also of an invalid record. error_code:
    the one synclog stored, else the message's part before the delimiter. membership: a succeeded delete takes the record out of the sync's audience, any
    other succeeded operation puts it in (seed 000's segment query); other rows, and records the
    identifier checks flagged (a run holding an identifier twice gives them no order), say nothing. -#}
select
    'census' as layout,
    sync_id,
    sync_run_id,
    record_identifier,
    operation,
    case
        when invalid_reason is not null then 'invalid'
        when status = 'succeeded' then 'succeeded'
        when status_message = {{ synclog.synclog_aborted_message() }} then 'aborted'
        else 'rejected'
    end as status,
    status as layout_status,
    status_message,
    invalid_reason,
    coalesce(error_code, case when status = 'rejected' then {{ synclog.synclog_error_code('status_message') }} end)
        as error_code,
    case
        when invalid_reason is not null then null
        when status = 'succeeded' and operation = 'delete' then 'out'
        when status = 'succeeded' then 'in'
    end as membership,
    batch_started_at,
    coalesce(batch_completed_at, batch_started_at) as synced_at,
    record_payload as payload
from {{ source('synclog_census', 'sync_log') }}
