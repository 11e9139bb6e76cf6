{#- Every logged record of every layout read, with the destination's error code of a rejection. -#}
with records as (
    {{ synclog.synclog_union_layouts(
        {'census': 'stg_synclog__census_records', 'hightouch': 'stg_synclog__hightouch_records'},
        ['layout', 'sync_id', 'sync_run_id', 'record_identifier', 'operation', 'status', 'layout_status',
         'status_message', 'invalid_reason', 'error_code', 'membership', 'batch_started_at', 'synced_at',
         'payload']
    ) }}
)

select
    records.*,
    status in ('succeeded', 'rejected') as attempted
from records
