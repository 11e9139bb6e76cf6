"""synclog-sqlite: a synclog target on Python's sqlite3, written against `synclog.plugin_api` only."""
