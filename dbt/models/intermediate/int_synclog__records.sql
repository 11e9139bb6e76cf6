{#- Every log row of every layout read (docs/analysts/dbt.md): sent when the destination was sent
    it (its outcome succeeded or rejected), flagged records too. -#}
with records as (
    {{ synclog.synclog_union_layouts(
        {'census': 'stg_synclog__census_records', 'hightouch': 'stg_synclog__hightouch_records'},
        ['layout', 'sync_id', 'sync_run_id', 'record_identifier', 'operation', 'outcome', 'tracked_status',
         'status_message', 'invalid_reason', 'error_code', 'membership', 'batch_started_at', 'synced_at',
         'payload']
    ) }}
)

select
    records.*,
    coalesce(outcome in ('succeeded', 'rejected'), false) as sent
from records
