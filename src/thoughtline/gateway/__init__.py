"""The disclosure gateway's client side: what OpenAI Chat Completions, OpenAI Responses
and Anthropic Messages clients send (read into one :class:`~thoughtline.gateway.call.GatewayCall`)
and how a reply reaches them in their own API (:mod:`thoughtline.gateway.dialects`)."""
