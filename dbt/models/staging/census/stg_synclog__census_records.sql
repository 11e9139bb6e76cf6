{{ config(enabled=synclog.synclog_has_layout('census')) }}
{#- census.sync_log in the package's shape (docs/analysts/dbt.md): one row per record of each
    batch. outcome is the destination's answer (succeeded, rejected, or aborted: the "Not
    attempted" message), flagged records too; tracked_status is what `synclog records` shows
    (invalid for a flagged record). membership: a row the destination accepted puts the record
    in, a delete takes it out (seed 000's reading). error_code: the one synclog stored, else the
    message's part before the delimiter. synced_at: the batch's completion. -#}
with log as (
    select
        sync_id,
        sync_run_id,
        record_identifier,
        operation,
        case
            when status = 'succeeded' then 'succeeded'
            when status_message = {{ synclog.synclog_aborted_message() }} then 'aborted'
            else 'rejected'
        end as outcome,
        status_message,
        invalid_reason,
        error_code,
        batch_started_at,
        coalesce(batch_completed_at, batch_started_at) as synced_at,
        record_payload
    from {{ source('synclog_census', 'sync_log') }}
)

select
    'census' as layout,
    sync_id,
    sync_run_id,
    record_identifier,
    operation,
    outcome,
    case when invalid_reason is not null then 'invalid' else outcome end as tracked_status,
    status_message,
    invalid_reason,
    coalesce(error_code, case when outcome = 'rejected' then {{ synclog.synclog_error_code('status_message') }} end)
        as error_code,
    case
        when outcome = 'succeeded' and operation = 'delete' then 'out'
        when outcome = 'succeeded' then 'in'
    end as membership,
    batch_started_at,
    synced_at,
    {{ synclog.synclog_json_text('record_payload') }} as payload
from log
