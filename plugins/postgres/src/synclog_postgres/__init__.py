"""synclog's PostgreSQL target: `postgresql://USER[:PASS]@HOST:PORT/DB`."""
