"""A simulated sync history, to try synclog on without a sync engine."""
