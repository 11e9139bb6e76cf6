"""Storage every Spark process reaches: the run store, the outage spool, load staging, exports."""
