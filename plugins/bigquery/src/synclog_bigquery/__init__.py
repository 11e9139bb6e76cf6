"""synclog target for Google BigQuery."""
