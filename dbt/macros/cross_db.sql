{#- What differs between warehouses, each through adapter.dispatch (a project overrides a
    twin by dispatching to its own namespace first). dbt-redshift falls back to the postgres__
    twins and dbt-databricks to the spark__ ones. -#}

{#- A row's grain as one string key: the columns' text joined by '|', hashed. -#}
{% macro synclog_key(columns) -%}
    {%- set parts = [] -%}
    {%- for column in columns -%}
        {%- do parts.append("coalesce(cast(" ~ column ~ " as " ~ dbt.type_string() ~ "), '')") -%}
        {%- if not loop.last %}{% do parts.append("'|'") %}{% endif -%}
    {%- endfor -%}
    {{ dbt.hash(dbt.concat(parts)) }}
{%- endmacro %}

{#- The UTC calendar day of a timestamp with time zone, as a DATE. -#}
{% macro synclog_day(timestamp) -%}
    {{ return(adapter.dispatch('synclog_day', 'synclog')(timestamp)) }}
{%- endmacro %}

{% macro default__synclog_day(timestamp) -%}
    cast({{ dbt.date_trunc('day', timestamp) }} as date)
{%- endmacro %}

{#- PostgreSQL and Redshift cast a timestamptz to the session's time zone's day. -#}
{% macro postgres__synclog_day(timestamp) -%}
    cast(({{ timestamp }} at time zone 'UTC') as date)
{%- endmacro %}

{#- DuckDB likewise (its TimeZone setting, the machine's by default). -#}
{% macro duckdb__synclog_day(timestamp) -%}
    cast(timezone('UTC', {{ timestamp }}) as date)
{%- endmacro %}

{#- BigQuery's DATE(timestamp, zone). -#}
{% macro bigquery__synclog_day(timestamp) -%}
    date({{ timestamp }}, 'UTC')
{%- endmacro %}

{#- Snowflake keeps each TIMESTAMP_TZ's own offset: convert to UTC first. -#}
{% macro snowflake__synclog_day(timestamp) -%}
    cast(convert_timezone('UTC', {{ timestamp }}) as date)
{%- endmacro %}

{#- Spark: timestamps are instants shown in the session's zone. -#}
{% macro spark__synclog_day(timestamp) -%}
    to_date(to_utc_timestamp({{ timestamp }}, current_timezone()))
{%- endmacro %}

{#- The destination's error code: the message's part before the first delimiter (var
    synclog_error_code_delimiter, ':' by default), trimmed; the whole message when it has none.
    dbt.split_part is itself dispatched (Spark's split() escapes the delimiter). -#}
{% macro synclog_error_code(message) -%}
    {{ return(adapter.dispatch('synclog_error_code', 'synclog')(message)) }}
{%- endmacro %}

{% macro default__synclog_error_code(message) -%}
    {%- set delimiter = "'" ~ synclog.synclog_error_code_delimiter() | replace("'", "''") ~ "'" -%}
    trim({{ dbt.split_part(message, delimiter, 1) }})
{%- endmacro %}

{#- A JSON column's value as JSON text: the text the warehouse's JSON type gives it (PostgreSQL's
    jsonb one text per value, DuckDB's JSON and Spark's strings the text as written), so that two
    copies of one payload compare equal as text. -#}
{% macro synclog_json_text(column) -%}
    {{ return(adapter.dispatch('synclog_json_text', 'synclog')(column)) }}
{%- endmacro %}

{% macro default__synclog_json_text(column) -%}
    cast({{ column }} as {{ dbt.type_string() }})
{%- endmacro %}

{% macro snowflake__synclog_json_text(column) -%}
    to_json({{ column }})
{%- endmacro %}

{% macro bigquery__synclog_json_text(column) -%}
    to_json_string({{ column }})
{%- endmacro %}

{% macro redshift__synclog_json_text(column) -%}
    json_serialize({{ column }})
{%- endmacro %}

{#- One row per top-level field of a JSON object held as text (`json_column` of `relation`, as
    synclog_json_text gives it) that holds a value (JSON null is none): `columns` of `relation`,
    then field_name and field_value, the value in the one JSON text form of docs/analysts/dbt.md. -#}
{% macro synclog_json_fields(relation, json_column, columns) -%}
    {{ return(adapter.dispatch('synclog_json_fields', 'synclog')(relation, json_column, columns)) }}
{%- endmacro %}

{#- A number's one text form: integral and below 2^53 in size, the integer; else the text of
    `as_double` (the number as a double; default: `number` itself). -#}
{% macro synclog_number_text(number, as_double=none) -%}
    case when abs({{ number }}) < 9007199254740992 and {{ number }} = floor({{ number }})
         then cast(cast({{ number }} as {{ dbt.type_bigint() }}) as {{ dbt.type_string() }})
         else cast({{ as_double or number }} as {{ dbt.type_string() }}) end
{%- endmacro %}

{#- DuckDB's json_each gives each value as JSON (arrays and objects written compactly) and its type. -#}
{% macro duckdb__synclog_json_fields(relation, json_column, columns) -%}
    select {% for c in columns %}r.{{ c }}, {% endfor -%}
        j.key as field_name,
        case
            when j.type in ('VARCHAR', 'BOOLEAN', 'OBJECT', 'ARRAY') then cast(j.value as varchar)
            else {{ synclog.synclog_number_text('cast(j.value as double)') }}
        end as field_value
    from {{ relation }} as r, json_each(cast(r.{{ json_column }} as json)) as j
    where j.type <> 'NULL'
{%- endmacro %}

{#- PostgreSQL's jsonb writes arrays and objects with a space after each `,` and `:`: removed
    outside strings. Numbers are jsonb's numeric (exact), made a double only past 2^53. -#}
{% macro postgres__synclog_json_fields(relation, json_column, columns) -%}
    select {% for c in columns %}r.{{ c }}, {% endfor -%}
        j.key as field_name,
        case jsonb_typeof(j.value)
            when 'number' then {{ synclog.synclog_number_text(
                "cast(j.value #>> '{}' as numeric)", "cast(j.value #>> '{}' as double precision)") }}
            when 'string' then j.value::text
            when 'boolean' then j.value::text
            else regexp_replace(j.value::text, '("(?:[^"\\]|\\.)*")|\s+', '\1', 'g')
        end as field_value
    from {{ relation }} as r
    cross join lateral jsonb_each(cast(r.{{ json_column }} as jsonb)) as j
    where jsonb_typeof(j.value) <> 'null'
{%- endmacro %}

{#- Redshift: PartiQL's UNPIVOT over the text parsed to SUPER. -#}
{% macro redshift__synclog_json_fields(relation, json_column, columns) -%}
    select {% for c in columns %}r.{{ c }}, {% endfor -%}
        j_key as field_name,
        case json_typeof(j_value)
            when 'number' then {{ synclog.synclog_number_text('cast(j_value as double precision)') }}
            else json_serialize(j_value)
        end as field_value
    from (select *, json_parse({{ json_column }}) as document from {{ relation }}) as r,
        unpivot r.document as j_value at j_key
    where json_typeof(j_value) <> 'null'
{%- endmacro %}

{% macro snowflake__synclog_json_fields(relation, json_column, columns) -%}
    select {% for c in columns %}r.{{ c }}, {% endfor -%}
        j.key as field_name,
        case
            when typeof(j.value) in ('INTEGER', 'DECIMAL', 'DOUBLE')
                then {{ synclog.synclog_number_text('cast(j.value as double)') }}
            else to_json(j.value)
        end as field_value
    from {{ relation }} as r, lateral flatten(input => parse_json(r.{{ json_column }})) as j
    where typeof(j.value) <> 'NULL_VALUE'
{%- endmacro %}

{% macro bigquery__synclog_json_fields(relation, json_column, columns) -%}
    select {% for c in columns %}r.{{ c }}, {% endfor -%}
        field_name,
        case json_type(parse_json(r.{{ json_column }})[field_name])
            when 'number' then {{ synclog.synclog_number_text('lax_float64(parse_json(r.' ~ json_column ~ ')[field_name])') }}
            else to_json_string(parse_json(r.{{ json_column }})[field_name])
        end as field_value
    from {{ relation }} as r
    cross join unnest(json_keys(parse_json(r.{{ json_column }}), 1)) as field_name
    where json_type(parse_json(r.{{ json_column }})[field_name]) <> 'null'
{%- endmacro %}

{#- Spark and Databricks: the text parsed to a VARIANT, its fields by variant_explode. -#}
{% macro spark__synclog_json_fields(relation, json_column, columns) -%}
    select {% for c in columns %}r.{{ c }}, {% endfor -%}
        j.key as field_name,
        case
            when schema_of_variant(j.value) in ('BIGINT', 'DOUBLE') or schema_of_variant(j.value) like 'DECIMAL%'
                then {{ synclog.synclog_number_text('cast(j.value as double)') }}
            else to_json(j.value)
        end as field_value
    from {{ relation }} as r, lateral variant_explode(parse_json(r.{{ json_column }})) as j
    where schema_of_variant(j.value) <> 'VOID'
{%- endmacro %}

{#- A double precision float (dbt.type_float() is DuckDB's 4-byte FLOAT). -#}
{% macro synclog_type_double() -%}
    {{ return(adapter.dispatch('synclog_type_double', 'synclog')()) }}
{%- endmacro %}

{% macro default__synclog_type_double() -%}
    {{ dbt.type_float() }}
{%- endmacro %}

{% macro duckdb__synclog_type_double() -%}
    double
{%- endmacro %}
