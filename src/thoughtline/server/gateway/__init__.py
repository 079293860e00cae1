"""The daemon's gateway: OpenAI- and Anthropic-compatible paths whose calls are runs of
the daemon's, for clients configured in ``[gateway.clients.NAME]`` (docs/gateway.md).

The client APIs themselves (reading a body, rendering a reply) are the pure dialects of
:mod:`thoughtline.gateway`; this package is the server side: who the client is
(:mod:`.clients`), which endpoint and model it may call (:mod:`.routing`), the carriers
kept between its calls (:mod:`.carriers`), the run each call is (:mod:`.bridge`,
:mod:`.live`) and the paths (:mod:`.routes`)."""
