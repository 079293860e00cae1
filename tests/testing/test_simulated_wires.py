"""The simulator's half of each wire API is found through the wire's unit
(``thoughtline.testing.wires``): every wire API has a renderer and a round-trip rule,
and each simulated built-in endpoint serves its wire API's path with them."""

from __future__ import annotations

from thoughtline.providers.endpoints import BUILTIN_ENDPOINTS
from thoughtline.providers.registry import WIRE_APIS, wire_for
from thoughtline.testing.profiles import default_profiles
from thoughtline.testing.wires import SIMULATED, simulated


def test_every_wire_api_has_a_simulator_renderer_and_round_trip_rule() -> None:
    assert set(SIMULATED) == set(WIRE_APIS)


def test_each_simulated_endpoint_speaks_its_wire_with_that_wires_renderer_and_rule() -> None:
    profiles = default_profiles()
    for name, spec in BUILTIN_ENDPOINTS.items():
        wire = simulated(wire_for(spec.wire_api))
        routes = profiles[name].routes
        # The endpoint's own wire API is among its routes (openai serves two).
        served = [route for route in routes if isinstance(route.renderer, wire.renderer)]
        assert served, f"{name}: no route renders {spec.wire_api}"
        for route in served:
            assert route.rule is None or isinstance(route.rule, wire.round_trips), name
