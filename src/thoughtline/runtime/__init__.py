"""The runtime: runs, tasks, disclosure, honest reasoning status, the layered trace."""
