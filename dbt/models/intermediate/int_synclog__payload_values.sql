{#- Each top-level field of each payload of int_synclog__payloads that holds a value (JSON null
    is none), in the one JSON text form of docs/analysts/dbt.md. -#}
{%- set payload_columns = ['layout', 'sync_id', 'record_identifier', 'sync_run_id', 'payload_number', 'payloads'] -%}
{{ synclog.synclog_json_fields(ref('int_synclog__payloads'), 'payload', payload_columns) }}
