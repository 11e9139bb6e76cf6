"""Layouts: the families of log tables synclog writes (census, hightouch, lake)."""
