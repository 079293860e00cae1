"""The three client APIs the gateway speaks, one module each: ``chat_completions``,
``messages`` (Anthropic) and ``responses``. Each reads a body into a
:class:`~thoughtline.gateway.call.GatewayCall` (``parse``), renders a reply from the
gated events (a ``…Stream`` class: ``feed`` each event, then ``close``) or from the
final response (``render``), and writes an error in its API's shape
(``error_response``). They import nothing above the provider layer's model."""
