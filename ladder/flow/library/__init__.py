"""Flows shipped with Lull (data files)."""
