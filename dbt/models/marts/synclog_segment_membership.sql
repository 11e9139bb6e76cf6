{#- Which records were in the sync's audience at a time? One row per stay (docs/analysts/dbt.md).
    Each run's rows of a record make one verdict (in, still, out: its last row, a removal winning a
    tie, at the time of the run's first row with that verdict); a stay begins at a verdict other
    than out after none or after out, and ends at the next out. Its start is known unless its
    first verdict is hightouch's `changed`, or census' first verdict of a record in a sync whose
    log retention cut. -#}
with rows_of_runs as (
    select
        layout,
        sync_id,
        record_identifier,
        sync_run_id,
        synced_at,
        membership,
        max(synced_at) over (partition by layout, sync_id, record_identifier, sync_run_id) as last_at
    from {{ ref('int_synclog__records') }}
    where membership is not null and record_identifier is not null
),

verdicts as (
    select
        layout,
        sync_id,
        record_identifier,
        sync_run_id,
        case
            when max(case when synced_at = last_at and membership = 'out' then 1 else 0 end) = 1 then 'out'
            when max(case when synced_at = last_at and membership = 'in' then 1 else 0 end) = 1 then 'in'
            else 'still'
        end as verdict,
        min(case when membership = 'out' then synced_at end) as out_at,
        min(case when membership = 'in' then synced_at end) as in_at,
        min(case when membership = 'still' then synced_at end) as still_at
    from rows_of_runs
    group by layout, sync_id, record_identifier, sync_run_id
),

sequenced as (
    select
        layout,
        sync_id,
        record_identifier,
        sync_run_id,
        verdict,
        verdict_at,
        lag(verdict) over (partition by layout, sync_id, record_identifier order by verdict_at, sync_run_id)
            as previous_verdict
    from (
        select
            verdicts.*,
            case verdict when 'out' then out_at when 'in' then in_at else still_at end as verdict_at
        from verdicts
    ) as timed
),

edges as (
    select
        sequenced.*,
        lead(sync_run_id) over (partition by layout, sync_id, record_identifier order by verdict_at, sync_run_id)
            as next_run_id,
        lead(verdict_at) over (partition by layout, sync_id, record_identifier order by verdict_at, sync_run_id)
            as next_at
    from sequenced
    where (verdict <> 'out' and (previous_verdict is null or previous_verdict = 'out'))
        or (verdict = 'out' and previous_verdict is not null and previous_verdict <> 'out')
),

stays as (
    select
        e.*,
        case
            when e.verdict = 'in' and (e.layout = 'hightouch' or e.previous_verdict is not null or h.retained_since is null)
                then true
            else false
        end as entry_retained
    from edges as e
    left join {{ ref('int_synclog__retention') }} as h on h.layout = e.layout and h.sync_id = e.sync_id
    where e.verdict <> 'out'
)

select
    {{ synclog.synclog_key(['layout', 'sync_id', 'record_identifier', 'sync_run_id']) }} as stay_key,
    case when entry_retained then {{ synclog.synclog_key(['layout', 'sync_id', 'sync_run_id']) }} end
        as entered_run_key,
    layout,
    sync_id,
    record_identifier,
    sync_run_id as first_run_id,
    verdict_at as first_seen_at,
    case when entry_retained then sync_run_id end as entered_run_id,
    case when entry_retained then verdict_at end as valid_from,
    entry_retained,
    next_run_id as left_run_id,
    next_at as valid_to,
    next_run_id is null as is_current
from stays
