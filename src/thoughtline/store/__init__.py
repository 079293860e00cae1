"""Durable runs, tasks and trace events (SQLite by default)."""
