{#- When was my data updated in the destination? Per layout, sync and record identifier: the last
    attempt (a record sent to the destination: succeeded or rejected) and the last one that
    succeeded (NULL if none did). Times are the batch's completion where the layout has it
    (census), else its start (hightouch). -#}
with attempts as (
    select
        layout,
        sync_id,
        record_identifier,
        sync_run_id,
        status,
        status_message,
        synced_at,
        row_number() over (
            partition by layout, sync_id, record_identifier order by synced_at desc, sync_run_id desc
        ) as newest,
        row_number() over (
            partition by layout, sync_id, record_identifier, status order by synced_at desc, sync_run_id desc
        ) as newest_of_status
    from {{ ref('int_synclog__records') }}
    where attempted and record_identifier is not null
),

last_attempt as (
    select * from attempts where newest = 1
),

last_success as (
    select * from attempts where status = 'succeeded' and newest_of_status = 1
)

select
    {{ synclog.synclog_key(['a.layout', 'a.sync_id', 'a.record_identifier']) }} as record_key,
    {{ synclog.synclog_key(['a.layout', 'a.sync_id', 'a.sync_run_id']) }} as last_attempt_run_key,
    a.layout,
    a.sync_id,
    a.record_identifier,
    a.sync_run_id as last_attempt_run_id,
    a.synced_at as last_attempted_at,
    a.status as last_attempt_status,
    a.status_message as last_attempt_message,
    s.sync_run_id as last_succeeded_run_id,
    s.synced_at as last_succeeded_at
from last_attempt as a
left join last_success as s
    on s.layout = a.layout and s.sync_id = a.sync_id and s.record_identifier = a.record_identifier
