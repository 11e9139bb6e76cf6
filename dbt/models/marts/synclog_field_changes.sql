{#- Per record, top-level field and run, old → new value between consecutive payloads of the
    record (int_synclog__payloads: one per run, ordered by time, then run id), to and from NULL (a
    field missing from a payload, or JSON null) too; values in the one JSON text form of
    docs/analysts/dbt.md. Only the values a payload holds are read: a field's neighbouring values
    (lag / lead over its payload numbers) tell where it changed, was added or went missing, so no
    row is made for a field a payload lacks. -#}
with present as (
    select
        layout,
        sync_id,
        record_identifier,
        field_name,
        payload_number,
        payloads,
        field_value,
        lag(payload_number) over (
            partition by layout, sync_id, record_identifier, field_name order by payload_number
        ) as previous_number,
        lag(field_value) over (
            partition by layout, sync_id, record_identifier, field_name order by payload_number
        ) as previous_value,
        lead(payload_number) over (
            partition by layout, sync_id, record_identifier, field_name order by payload_number
        ) as next_number
    from {{ ref('int_synclog__payload_values') }}
),

changes as (
    -- a value other than the previous payload's (which held another, or none)
    select
        layout,
        sync_id,
        record_identifier,
        field_name,
        payload_number,
        case when previous_number = payload_number - 1 then previous_value end as old_value,
        field_value as new_value
    from present
    where payload_number > 1
        and (previous_number is null or previous_number < payload_number - 1 or previous_value <> field_value)
    union all
    -- the next payload lacks the field
    select
        layout,
        sync_id,
        record_identifier,
        field_name,
        payload_number + 1 as payload_number,
        field_value as old_value,
        cast(null as {{ dbt.type_string() }}) as new_value
    from present
    where (next_number is null and payload_number < payloads) or next_number > payload_number + 1
)

select
    {{ synclog.synclog_key(['c.layout', 'c.sync_id', 'c.record_identifier', 'c.field_name', 'p.sync_run_id']) }}
        as field_change_key,
    {{ synclog.synclog_key(['c.layout', 'c.sync_id', 'c.record_identifier']) }} as record_key,
    {{ synclog.synclog_key(['c.layout', 'c.sync_id', 'p.sync_run_id']) }} as run_key,
    c.layout,
    c.sync_id,
    c.record_identifier,
    c.field_name,
    p.previous_run_id,
    p.sync_run_id,
    p.synced_at as changed_at,
    c.old_value,
    c.new_value
from changes as c
inner join {{ ref('int_synclog__payloads') }} as p
    on p.layout = c.layout and p.sync_id = c.sync_id and p.record_identifier = c.record_identifier
    and p.payload_number = c.payload_number
