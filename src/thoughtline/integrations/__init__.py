"""Adapters that expose thoughtline through other protocols (ACP, ...); each behind its extra."""
