{#- Each run not past retention: its records (planned) and rejection rate against the median of the
    same sync's previous N runs not past retention (var synclog_anomaly_runs, 7), by start, then run
    id (docs/analysts/dbt.md). Flagged when the records differ from their median by more than var
    synclog_anomaly_volume_threshold (0.5: 50 %) of it, or the rejection rate from its median by
    more than var synclog_anomaly_rejection_rate_threshold (0.1: ten points), once at least var
    synclog_anomaly_min_runs (3) previous runs exist. A run meets each of its previous runs by an
    equality join on the run number (one per offset 1..N), so the work grows with runs × N; the
    median is computed with window functions only, the same on every warehouse. -#}
{%- set window = var('synclog_anomaly_runs', 7) | int -%}
{%- set min_runs = var('synclog_anomaly_min_runs', 3) | int -%}
{%- set volume_threshold = var('synclog_anomaly_volume_threshold', 0.5) | float -%}
{%- set rate_threshold = var('synclog_anomaly_rejection_rate_threshold', 0.1) | float -%}
with runs as (
    select
        run_key,
        layout,
        sync_id,
        sync_run_id,
        started_at,
        planned as records,
        rejection_rate,
        row_number() over (partition by layout, sync_id order by started_at, sync_run_id) as run_number
    from {{ ref('synclog_run_health') }}
    where not past_retention
),

offsets as (
    {%- for offset in range(1, window + 1) %}
    select {{ offset }} as back{% if not loop.last %} union all{% endif %}
    {%- endfor %}
),

history as (
    select
        r.run_key,
        p.records,
        p.rejection_rate,
        count(*) over (partition by r.run_key) as previous_runs,
        count(p.records) over (partition by r.run_key) as counted_runs,
        row_number() over (
            partition by r.run_key order by case when p.records is null then 1 else 0 end, p.records
        ) as records_rank,
        count(p.rejection_rate) over (partition by r.run_key) as rated_runs,
        row_number() over (
            partition by r.run_key order by case when p.rejection_rate is null then 1 else 0 end, p.rejection_rate
        ) as rate_rank
    from runs as r
    cross join offsets as o
    inner join runs as p
        on p.layout = r.layout and p.sync_id = r.sync_id and p.run_number = r.run_number - o.back
),

medians as (
    select
        run_key,
        max(previous_runs) as previous_runs,
        avg(case when records is not null
            and records_rank * 2 in (counted_runs, counted_runs + 1, counted_runs + 2)
            then cast(records as {{ synclog.synclog_type_double() }}) end) as median_records,
        avg(case when rejection_rate is not null
            and rate_rank * 2 in (rated_runs, rated_runs + 1, rated_runs + 2)
            then rejection_rate end) as median_rejection_rate
    from history
    group by run_key
),

compared as (
    select
        r.*,
        coalesce(m.previous_runs, 0) as previous_runs,
        m.median_records,
        m.median_rejection_rate
    from runs as r
    left join medians as m on m.run_key = r.run_key
)

select
    compared.*,
    coalesce(
        previous_runs >= {{ min_runs }} and abs(records - median_records) > {{ volume_threshold }} * median_records,
        false
    ) as records_anomaly,
    coalesce(
        previous_runs >= {{ min_runs }} and abs(rejection_rate - median_rejection_rate) > {{ rate_threshold }},
        false
    ) as rejection_rate_anomaly
from compared
