"""Shared fixtures: the private PulseAudio lab (real microphone and speaker, no sound card);
the real piper and whisper models, loaded once per test process and shared by every
test file that runs a voice backend; and a cache folder of the test run's own
(voices.understanding.disk_cache), so tests neither read what an earlier run left nor write into the
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

# one BLAS thread a test process: OpenBLAS's threads spin while they wait for work, so two
# xdist workers (or a worker beside any busy process) each running two of them on two
# cores slow each other down several times (the classifier bench: 9.9 s with one thread
# beside a busy loop, 23.4 s with the default two; alone 9.9 s against 8.3 s). Set before
# numpy loads, and inherited by the workers and every subprocess a test starts.
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
# whisper's OpenMP threads (libgomp) likewise sleep rather than spin between decodes: a
# decode beside a busy loop, median of 5, 790 ms spinning against 713 ms passive (alone
# 529 and 542 ms)
os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")


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


@pytest.fixture(autouse=True)
def no_stream_outlives_its_test(request):
    """Every PortAudio stream a test opens is closed by the end of it. One left running
    calls back into a freed cffi callback once its Python object is collected: the worker
    aborts later, in whatever test is running then."""
    if "pulse_lab" not in request.fixturenames:
        yield
        return
    import sys
    import traceback

    sd = sys.modules.get("sounddevice")
    if sd is None:
        import sounddevice as sd
    opened: list[tuple[object, str]] = []
    real_init = sd._StreamBase.__init__

    def tracked_init(self, *args, **kwargs):
        real_init(self, *args, **kwargs)
        opened.append((self, "".join(traceback.format_stack()[-14:-1])))

    sd._StreamBase.__init__ = tracked_init
    try:
        yield
    finally:
        sd._StreamBase.__init__ = real_init
        left = [(s, where) for s, where in opened if not s.closed]
        for stream, _ in left:
            stream.close()
        assert not left, "streams left open by the test, opened at:\n" + "\n---\n".join(w for _, w in left)
