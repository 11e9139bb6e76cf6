{{ config(materialized='table') }}
{#- One payload per record and run (docs/analysts/dbt.md, synclog_field_changes): of the rows sent
    with an identifier and a payload, the run's copy sent last; copies sent at that same time that
    differ give the run no payload. payload_number orders a record's payloads by time, then run;
    payloads counts them; previous_run_id is the run of the payload before. -#}
with sent as (
    select
        layout,
        sync_id,
        record_identifier,
        sync_run_id,
        synced_at,
        payload,
        max(synced_at) over (partition by layout, sync_id, record_identifier, sync_run_id) as last_sent_at
    from {{ ref('int_synclog__records') }}
    where sent and record_identifier is not null and payload is not null
),

last_copies as (
    select
        layout,
        sync_id,
        record_identifier,
        sync_run_id,
        synced_at,
        min(payload) as payload,
        count(distinct payload) as versions
    from sent
    where synced_at = last_sent_at
    group by layout, sync_id, record_identifier, sync_run_id, synced_at
)

select
    layout,
    sync_id,
    record_identifier,
    sync_run_id,
    synced_at,
    payload,
    row_number() over (partition by layout, sync_id, record_identifier order by synced_at, sync_run_id)
        as payload_number,
    lag(sync_run_id) over (partition by layout, sync_id, record_identifier order by synced_at, sync_run_id)
        as previous_run_id,
    count(*) over (partition by layout, sync_id, record_identifier) as payloads
from last_copies
where versions = 1
