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

{#- One row per top-level field of a JSON object column: `columns` of `relation`, then
    field_name and field_value, the value as text (strings unquoted, numbers and booleans as
    JSON writes them, arrays and objects as JSON text, JSON null as NULL). The column is JSON
    (DuckDB, BigQuery), JSONB (PostgreSQL), VARIANT (Snowflake), SUPER (Redshift) or STRING
    holding JSON text (Spark, Databricks). -#}
{% macro synclog_json_fields(relation, json_column, columns) -%}
    {{ return(adapter.dispatch('synclog_json_fields', 'synclog')(relation, json_column, columns)) }}
{%- endmacro %}

{% macro duckdb__synclog_json_fields(relation, json_column, columns) -%}
    select {% for c in columns %}r.{{ c }}, {% endfor -%}
        j.key as field_name,
        case when j.type in ('OBJECT', 'ARRAY') then cast(j.value as varchar)
             else j.value ->> '$' end as field_value
    from {{ relation }} as r, json_each(r.{{ json_column }}) as j
{%- endmacro %}

{% macro postgres__synclog_json_fields(relation, json_column, columns) -%}
    select {% for c in columns %}r.{{ c }}, {% endfor -%}
        j.key as field_name, j.value as field_value
    from {{ relation }} as r
    cross join lateral jsonb_each_text(cast(r.{{ json_column }} as jsonb)) as j
{%- endmacro %}

{% macro redshift__synclog_json_fields(relation, json_column, columns) -%}
    select {% for c in columns %}r.{{ c }}, {% endfor -%}
        j_key as field_name,
        case json_typeof(j_value) when 'string' then cast(j_value as varchar(65535))
             when 'null' then null else json_serialize(j_value) end as field_value
    from {{ relation }} as r, unpivot r.{{ json_column }} as j_value at j_key
{%- endmacro %}

{% macro snowflake__synclog_json_fields(relation, json_column, columns) -%}
    select {% for c in columns %}r.{{ c }}, {% endfor -%}
        j.key as field_name,
        case when typeof(j.value) in ('OBJECT', 'ARRAY') then to_json(j.value)
             else j.value::string end as field_value
    from {{ relation }} as r, lateral flatten(input => r.{{ json_column }}) as j
{%- endmacro %}

{% macro bigquery__synclog_json_fields(relation, json_column, columns) -%}
    select {% for c in columns %}r.{{ c }}, {% endfor -%}
        field_name,
        case when json_type(r.{{ json_column }}[field_name]) in ('object', 'array')
             then to_json_string(r.{{ json_column }}[field_name])
             else json_value(r.{{ json_column }}[field_name]) end as field_value
    from {{ relation }} as r
    cross join unnest(json_keys(r.{{ json_column }}, 1)) as field_name
{%- endmacro %}

{#- Spark and Databricks: JSON text (a VARIANT column is cast to its JSON text first). -#}
{% macro spark__synclog_json_fields(relation, json_column, columns) -%}
    select {% for c in columns %}r.{{ c }}, {% endfor -%}
        j.field_name, j.field_value
    from {{ relation }} as r
    lateral view explode(from_json(cast(r.{{ json_column }} as string), 'map<string,string>')) j
        as field_name, field_value
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
