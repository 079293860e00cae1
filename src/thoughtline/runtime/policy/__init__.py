"""The runtime's decisions: disclosure, retention, recovery, budget, honest
reasoning status, scrubbing, request size, checks and the trace's layers. Imported by
planning and the engine, never the other way."""
