"""The provider-facing data: parts, requests, stream events, the accumulator and
threads. It imports nothing of the store, the runtime or a surface."""
