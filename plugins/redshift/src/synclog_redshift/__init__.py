"""synclog's Amazon Redshift target: `redshift://USER[:PASSWORD]@HOST:PORT/DB`."""
