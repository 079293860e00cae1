"""thoughtline: run LLM specialist tasks and decide, once, what happens to their reasoning."""

__version__ = "0.1.0"
