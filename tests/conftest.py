"""Shared pytest set-up. Fixtures that start real peers live in ``tests/support``."""
