{#- Which records were members of this segment at this time? One row per stay of a record in a
    sync's audience: valid_from when it entered, valid_to when it left (NULL while still in), so
    members at time T are the rows with valid_from <= T and (valid_to is null or valid_to > T).
    census: a succeeded operation other than delete after none or after a delete enters, a
    succeeded delete leaves (seed 000's query); hightouch: added enters, removed leaves. A leave
    with no stay open (its entry older than retention kept) is not a stay. -#}
with events as (
    select
        layout,
        sync_id,
        record_identifier,
        sync_run_id,
        synced_at,
        membership,
        lag(membership) over (
            partition by layout, sync_id, record_identifier order by synced_at, sync_run_id
        ) as previous_membership
    from {{ ref('int_synclog__records') }}
    where membership is not null and record_identifier is not null
),

transitions as (
    select
        *,
        lead(sync_run_id) over (
            partition by layout, sync_id, record_identifier order by synced_at, sync_run_id
        ) as next_run_id,
        lead(synced_at) over (
            partition by layout, sync_id, record_identifier order by synced_at, sync_run_id
        ) as next_at
    from events
    where (membership = 'in' and (previous_membership is null or previous_membership = 'out'))
        or (membership = 'out' and previous_membership = 'in')
)

select
    {{ synclog.synclog_key(['layout', 'sync_id', 'record_identifier', 'sync_run_id']) }} as stay_key,
    {{ synclog.synclog_key(['layout', 'sync_id', 'sync_run_id']) }} as entered_run_key,
    layout,
    sync_id,
    record_identifier,
    sync_run_id as entered_run_id,
    synced_at as valid_from,
    next_run_id as left_run_id,
    next_at as valid_to,
    next_run_id is null as is_current
from transitions
where membership = 'in'
