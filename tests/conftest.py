"""Shared fixtures: the private PulseAudio lab (real microphone and speaker, no sound card);
the real piper and whisper models, loaded once per test process and shared by every
test file that runs a voice backend; and a cache folder of the test run's own
(voices.disk_cache), so tests neither read what an earlier run left nor write into the
user's cache. Subprocesses inherit it."""

import atexit
import os
import shutil
import tempfile

import pytest

from audio_lab import pulse_lab  # noqa: F401  (a fixture, made available to every test file)

# one folder for the whole run: the process that makes it (the run's first, which starts
# the xdist workers after loading this file) removes it; the workers inherit it, so a
# classifier one of them trained is not trained again by the other (entries are written
# whole, then renamed into place)
if os.environ.get("LULL_TEST_RUN_CACHE"):
    os.environ["LULL_CACHE_DIR"] = os.environ["LULL_TEST_RUN_CACHE"]
else:
    os.environ["LULL_CACHE_DIR"] = os.environ["LULL_TEST_RUN_CACHE"] = _cache = tempfile.mkdtemp(prefix="lull-test-cache-")
    atexit.register(shutil.rmtree, _cache, True)


@pytest.fixture(scope="session")
def loaded_models():
    """piper (deterministic: bit-identical run to run) and whisper, loaded once."""
    from voices.backends.voice import VoiceModels

    return VoiceModels.load(deterministic=True)


@pytest.fixture(scope="session")
def lexical_models(loaded_models):
    """The same loaded models with the lexical intent matcher (no second load)."""
    from dataclasses import replace

    return replace(loaded_models, matcher_kind="lexical")
