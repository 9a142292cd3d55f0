"""A closed PortAudio stream outlives its owner for a few seconds (voices.audio.close_stream):
a PortAudio thread still leaving a stream that lost its device calls its callbacks, which
sounddevice keeps on the stream object."""

from __future__ import annotations

import gc
import weakref

from voices import audio


class _Stream:
    def __init__(self, fails: bool = False) -> None:
        self.fails = fails
        self.closed = False

    def close(self) -> None:
        self.closed = True
        if self.fails:
            raise RuntimeError("a lost device refused to close")


def test_a_closed_stream_is_kept_a_while_then_let_go(monkeypatch):
    clock = [1000.0]
    monkeypatch.setattr(audio.time, "monotonic", lambda: clock[0])
    monkeypatch.setattr(audio, "_RECENTLY_CLOSED", type(audio._RECENTLY_CLOSED)())
    stream = _Stream(fails=True)
    kept = weakref.ref(stream)
    audio.close_stream(stream)  # its error is not the caller's: the stream is going anyway
    assert stream.closed
    del stream
    gc.collect()
    assert kept() is not None, "freed at once: a leaving PortAudio thread would call freed callbacks"
    clock[0] += audio._KEEP_CLOSED_S + 1
    audio.close_stream(_Stream())
    gc.collect()
    assert kept() is None, "kept for ever: every call's backend would stay in memory"
