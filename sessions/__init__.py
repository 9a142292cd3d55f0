"""Session journals: record, load, replay and report recorded sessions."""
