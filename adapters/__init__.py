"""Adapters of the ports: real ones for the world, and deterministic fakes."""
