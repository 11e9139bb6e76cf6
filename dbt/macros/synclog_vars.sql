{#- The package's settings: each var with its default, read in one place. -#}

{% macro synclog_layouts() -%}
    {{ return(var('synclog_layouts', ['census', 'hightouch'])) }}
{%- endmacro %}

{% macro synclog_has_layout(layout) -%}
    {{ return(layout in synclog.synclog_layouts()) }}
{%- endmacro %}

{% macro synclog_error_code_delimiter() -%}
    {{ return(var('synclog_error_code_delimiter', ':')) }}
{%- endmacro %}

{#- synclog's own message (synclog.layouts.census): how the census layout says that a record was
    never attempted. -#}
{% macro synclog_aborted_message() -%}
    {{ return("'Not attempted: the run ended before this record was sent'") }}
{%- endmacro %}

{#- `columns` of each layout's model named in `models` (layout → model), for the layouts the
    package reads (var synclog_layouts), one UNION ALL. -#}
{% macro synclog_union_layouts(models, columns) -%}
    {%- set chosen = [] -%}
    {%- for layout in synclog.synclog_layouts() if layout in models -%}
        {%- do chosen.append(models[layout]) -%}
    {%- endfor -%}
    {%- if not chosen -%}
        {{ exceptions.raise_compiler_error("synclog_layouts names none of: " ~ (models.keys() | join(', '))) }}
    {%- endif -%}
    {%- for model in chosen %}
    select {{ columns | join(', ') }} from {{ ref(model) }}
    {%- if not loop.last %}
    union all
    {%- endif -%}
    {%- endfor -%}
{%- endmacro %}
