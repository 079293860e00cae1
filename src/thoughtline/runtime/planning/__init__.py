"""From run options to specs: plans, roles, conversations, the run's tools
and the specs of every task. Imports the policy, never the engine."""
