"""Provider endpoints, capability data and the wire adapters."""
