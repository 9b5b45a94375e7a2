"""Pure request/response -> attribute extraction, one module per provider wire format."""
