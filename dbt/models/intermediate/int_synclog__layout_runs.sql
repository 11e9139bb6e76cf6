{#- Every run of every layout read, as its layout's staging model gives it. -#}
{{ synclog.synclog_union_layouts(
    {'census': 'stg_synclog__census_runs', 'hightouch': 'stg_synclog__hightouch_runs'},
    ['layout', 'sync_id', 'sync_run_id', 'run_status', 'started_at', 'finished_at', 'kept_rows', 'planned',
     'attempted', 'succeeded', 'rejected', 'aborted', 'invalid_null', 'invalid_duplicate']
) }}
