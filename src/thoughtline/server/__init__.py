"""The HTTP daemon (``thoughtline serve``): JSON API under ``/v1``, SSE live events, the
web page. Needs the ``[server]`` extra (FastAPI, uvicorn)."""
