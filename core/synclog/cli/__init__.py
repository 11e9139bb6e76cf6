"""The `synclog` command line."""
