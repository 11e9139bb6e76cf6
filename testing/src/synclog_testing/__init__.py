"""Test kit for synclog and its plugins: sample runs and records, and the conformance suite."""
