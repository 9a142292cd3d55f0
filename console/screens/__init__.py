"""The console's screens: rehearse, prompts, incidents, sessions."""
