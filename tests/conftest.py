"""Shared fixtures: the private PulseAudio lab (real microphone and speaker, no sound card)."""

from audio_lab import pulse_lab  # noqa: F401  (a fixture, made available to every test file)
