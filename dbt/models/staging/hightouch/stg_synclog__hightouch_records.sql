{{ config(enabled=synclog.synclog_has_layout('hightouch')) }}
{#- hightouch_audit.sync_changelog in the package's shape (docs/analysts/dbt.md). outcome is the
    destination's answer (succeeded; failed is rejected; aborted), flagged records too, NULL for a
    row that left the model with nothing sent; tracked_status is what `synclog records` shows
    (invalid for a flagged record). membership follows op_type, whatever the destination answered
    (seed 002's reading): added puts the row in, changed says it was in, removed takes it out.
    The changelog keeps only the batch's start. -#}
with log as (
    select
        sync_id,
        sync_run_id,
        row_id,
        op_type,
        case status when 'succeeded' then 'succeeded' when 'failed' then 'rejected' when 'aborted' then 'aborted' end
            as outcome,
        failure_reason,
        invalid_reason,
        error_code,
        batch_started_at,
        fields
    from {{ source('synclog_hightouch', 'sync_changelog') }}
)

select
    'hightouch' as layout,
    sync_id,
    sync_run_id,
    row_id as record_identifier,
    op_type as operation,
    outcome,
    case when invalid_reason is not null then 'invalid' else outcome end as tracked_status,
    failure_reason as status_message,
    invalid_reason,
    coalesce(error_code, case when outcome = 'rejected' then {{ synclog.synclog_error_code('failure_reason') }} end)
        as error_code,
    case op_type when 'added' then 'in' when 'changed' then 'still' when 'removed' then 'out' end as membership,
    batch_started_at,
    batch_started_at as synced_at,
    {{ synclog.synclog_json_text('fields') }} as payload
from log
