"""The conversation graph: flow files, their compiler and the flow runtime (pure)."""
