"""The config sections, one module per area; :mod:`..schema` assembles them."""
