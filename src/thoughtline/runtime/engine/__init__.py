"""Running a run and its tasks: the runtime, the execution and its record,
the task call and its steps, tool calls, the store writer and the shared clients."""
