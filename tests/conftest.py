"""Shared fixtures: the private PulseAudio lab (real microphone and speaker, no sound card);
and a cache folder of the test run's own (voices.disk_cache), so tests neither read what
an earlier run left nor write into the user's cache. Subprocesses inherit it."""

import atexit
import os
import shutil
import tempfile

from audio_lab import pulse_lab  # noqa: F401  (a fixture, made available to every test file)

os.environ["LULL_CACHE_DIR"] = _cache = tempfile.mkdtemp(prefix="lull-test-cache-")
atexit.register(shutil.rmtree, _cache, True)
