{#- Every run of every layout read, with the counts `synclog runs` shows. -#}
{{ synclog.synclog_union_layouts(
    {'census': 'stg_synclog__census_runs', 'hightouch': 'stg_synclog__hightouch_runs'},
    ['layout', 'sync_id', 'sync_run_id', 'started_at', 'finished_at', 'run_status', 'planned', 'attempted',
     'succeeded', 'rejected', 'invalid_null', 'invalid_duplicate', 'aborted']
) }}
