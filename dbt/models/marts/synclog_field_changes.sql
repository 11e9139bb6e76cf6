{#- Per record and field, old → new value between consecutive payloads the sync sent for the record
    (ordered by time, then run), including changes to and from NULL (a field missing from a
    payload, or JSON null, is NULL). Values are text (int_synclog__payload_values). -#}
with ordered as (
    select
        layout,
        sync_id,
        record_identifier,
        field_name,
        sync_run_id,
        synced_at,
        field_value,
        lag(sync_run_id) over (
            partition by layout, sync_id, record_identifier, field_name order by synced_at, sync_run_id
        ) as previous_run_id,
        lag(field_value) over (
            partition by layout, sync_id, record_identifier, field_name order by synced_at, sync_run_id
        ) as previous_value
    from {{ ref('int_synclog__payload_values') }}
)

select
    {{ synclog.synclog_key(['layout', 'sync_id', 'record_identifier', 'field_name', 'sync_run_id']) }}
        as field_change_key,
    {{ synclog.synclog_key(['layout', 'sync_id', 'record_identifier']) }} as record_key,
    {{ synclog.synclog_key(['layout', 'sync_id', 'sync_run_id']) }} as run_key,
    layout,
    sync_id,
    record_identifier,
    field_name,
    previous_run_id,
    sync_run_id,
    synced_at as changed_at,
    previous_value as old_value,
    field_value as new_value
from ordered
where previous_run_id is not null
    and (
        (previous_value is null and field_value is not null)
        or (previous_value is not null and field_value is null)
        or previous_value <> field_value
    )
