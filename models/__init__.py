"""The model registry: a manifest of known models, fetch with checksum, verify,
list, remove, and discovery of models that installed packages bundle."""
