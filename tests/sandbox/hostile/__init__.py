"""Hostile processors: each misbehaves in one way the harness must contain (tests/sandbox)."""
