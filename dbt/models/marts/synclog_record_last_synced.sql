{#- When was my data updated in the destination? Per layout, sync and record (docs/analysts/dbt.md):
    its last sent row and its last row the destination accepted, flagged rows too, ordered by
    time, then run id (copies one run sent at the same time: a success after a rejection, then by
    message). One pass of window functions and a GROUP BY: no join. -#}
{%- set newest_first = "synced_at desc, sync_run_id desc, case when outcome = 'succeeded' then 1 else 0 end desc, coalesce(status_message, '') desc" -%}
with sent as (
    select
        layout,
        sync_id,
        record_identifier,
        sync_run_id,
        outcome,
        status_message,
        invalid_reason,
        synced_at,
        row_number() over (partition by layout, sync_id, record_identifier order by {{ newest_first }}) as newest,
        row_number() over (partition by layout, sync_id, record_identifier, outcome order by {{ newest_first }})
            as newest_of_outcome
    from {{ ref('int_synclog__records') }}
    where sent and record_identifier is not null
),

records as (
    select
        layout,
        sync_id,
        record_identifier,
        max(case when newest = 1 then sync_run_id end) as last_attempt_run_id,
        max(case when newest = 1 then synced_at end) as last_attempted_at,
        max(case when newest = 1 then outcome end) as last_attempt_status,
        max(case when newest = 1 then status_message end) as last_attempt_message,
        max(case when newest = 1 then invalid_reason end) as last_attempt_invalid_reason,
        max(case when outcome = 'succeeded' and newest_of_outcome = 1 then sync_run_id end) as last_succeeded_run_id,
        max(case when outcome = 'succeeded' and newest_of_outcome = 1 then synced_at end) as last_succeeded_at
    from sent
    group by layout, sync_id, record_identifier
)

select
    {{ synclog.synclog_key(['layout', 'sync_id', 'record_identifier']) }} as record_key,
    {{ synclog.synclog_key(['layout', 'sync_id', 'last_attempt_run_id']) }} as last_attempt_run_key,
    records.*
from records
