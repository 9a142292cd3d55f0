"""`lull say|transcribe|devices`: the voice edges on their own."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer
from rich.table import Table

from ._app import app, check_new_file, err, fail, out, plain, print_text, write_new_file


@app.command("say")
def say(
    text: Annotated[str, typer.Argument(help="What the agent should say.")],
    out_path: Annotated[Path | None, typer.Option("--out", help="Write a WAV file instead of playing it.")] = None,
    voice: Annotated[str | None, typer.Option("--voice", help="Another piper voice (.onnx).")] = None,
    output_device: Annotated[str | None, typer.Option("--output-device", help="Speaker name or index.")] = None,
) -> None:
    """Speak TEXT with the on-device voice (piper), or write it to a WAV file.

    TEXT is one prompt: at most 1,000 characters. With --out nothing is played, and a
    file that exists already is never overwritten.

    Examples:
      lull say "What is your reference code?"
      lull say "Sure, take your time." --out ack.wav
    """
    import time

    from ladder.policy import MAX_PROMPT_CHARS
    from voices.tts import PiperVoice, VoiceError

    # the text first, then the file: neither costs loading the voice
    if not text.strip():
        fail('TEXT is empty; give the words to say, e.g. lull say "What is your reference code?"')
    if len(text) > MAX_PROMPT_CHARS:
        fail(f"TEXT is {len(text):,} characters; a prompt holds at most {MAX_PROMPT_CHARS:,} "
             "(about a minute of speech): split it into shorter prompts")
    if out_path is not None:
        check_new_file("--out", out_path)  # before the voice loads: a bad path costs nothing
    try:
        piper = PiperVoice(voice)
    except VoiceError as exc:
        fail(str(exc))
    started = time.monotonic()
    audio = piper.synthesize_all(text)
    seconds = len(audio) / piper.sample_rate
    if not len(audio):
        fail(f"TEXT {text!r} has nothing the voice can say (no words); nothing was written or played")
    if out_path is not None:
        import io

        import soundfile

        wav = io.BytesIO()
        soundfile.write(wav, audio, piper.sample_rate, subtype="PCM_16", format="WAV")
        write_new_file("--out", out_path, wav.getvalue())
        print_text(f"{out_path}: {seconds:.2f}s of audio, synthesized in {time.monotonic() - started:.2f}s")
        return
    from voices.audio import AudioUnavailable, resolve_device

    try:
        import sounddevice

        device = resolve_device(output_device, "output")
        sounddevice.play(audio, piper.sample_rate, device=device, blocking=True)
    except AudioUnavailable as exc:
        fail(f"{exc}; or use --out file.wav")
    print_text(f"played {seconds:.2f}s")


@app.command("transcribe")
def transcribe(
    wav: Annotated[Path, typer.Argument(help="A WAV file.")],
    stt_model: Annotated[str | None, typer.Option("--stt-model", help="A faster-whisper size name or directory.")] = None,
) -> None:
    """Transcribe a WAV file with the on-device recognizer (faster-whisper).

    Example: lull transcribe caller.wav
    """
    from voices.stt import RecognizerError, WhisperRecognizer, load_wav_16k

    try:
        audio = load_wav_16k(wav)
    except ValueError as exc:
        fail(str(exc))
    try:
        recognition = WhisperRecognizer(stt_model).transcribe(audio)
    except RecognizerError as exc:
        fail(str(exc))
    if recognition.reason:
        print_text(f"(no usable input: {recognition.reason})")
    else:
        print_text(recognition.text)  # whisper writes "[BLANK_AUDIO]" and the like: shown as they are
    print_text(f"{recognition.audio_s:.2f}s of audio decoded in {recognition.decode_s:.2f}s", console=err)


@app.command("devices")
def devices() -> None:
    """List the audio devices PortAudio can see.

    Example: lull devices
    """
    from voices.audio import AudioUnavailable, list_devices

    try:
        found = list_devices()
    except AudioUnavailable as exc:
        fail(str(exc))
    if not found:
        fail("no audio devices found; run `lull rehearse --backend text` to rehearse without audio")
    table = Table(title="Audio devices", title_justify="left")
    for column in ("index", "name", "inputs", "outputs", "rate", "default"):
        table.add_column(column)
    for d in found:
        default = ", ".join(k for k, v in (("input", d.is_default_input), ("output", d.is_default_output)) if v)
        table.add_row(str(d.index), plain(d.name), str(d.max_input_channels), str(d.max_output_channels), f"{d.default_samplerate:g}", default)
    out.print(table)
