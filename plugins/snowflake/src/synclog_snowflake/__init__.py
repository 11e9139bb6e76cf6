"""synclog's Snowflake target."""
