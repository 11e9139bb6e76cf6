"""Targets: the warehouses (and folders) log tables are written into."""
