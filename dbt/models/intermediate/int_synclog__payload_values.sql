{#- Each top-level field's value, as text, in each payload sent to the destination (succeeded or
    rejected records with an identifier): one row per (record appearance, field the record ever
    had), NULL where that payload lacks the field or holds JSON null. -#}
{%- set appearance = ['layout', 'sync_id', 'sync_run_id', 'record_identifier', 'synced_at'] -%}
with appearances as (
    select {{ appearance | join(', ') }}, payload
    from {{ ref('int_synclog__records') }}
    where attempted and record_identifier is not null and payload is not null
),

values_given as (
    {{ synclog.synclog_json_fields('appearances', 'payload', appearance) }}
),

record_fields as (
    select distinct layout, sync_id, record_identifier, field_name
    from values_given
)

select
    {% for c in appearance %}a.{{ c }}, {% endfor %}
    f.field_name,
    v.field_value
from appearances as a
inner join record_fields as f
    on f.layout = a.layout and f.sync_id = a.sync_id and f.record_identifier = a.record_identifier
left join values_given as v
    on v.layout = a.layout and v.sync_id = a.sync_id and v.sync_run_id = a.sync_run_id
    and v.record_identifier = a.record_identifier and v.field_name = f.field_name
