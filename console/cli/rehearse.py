"""`lull rehearse`: a live call, in the console or headless, on a chosen backend."""

from __future__ import annotations

import os
import statistics
import sys
from pathlib import Path
from typing import Annotated

import typer

from ladder.flow.understanding.shared_intents import flow_intents
from sessions.flowfiles import (
    DEFAULT_FLOW,
    FlowFileError,
    library_flow_path,
    load_flow,
    resolve_flow,
)

from ._app import app, err, fail, print_text, quiet_pipecat_logs

# what a session folder holds: a folder holding any of them is someone's recording
SESSION_FILES = ("journal.jsonl", "mic.wav", "out.wav")


def check_journal_folder(journal: Path) -> None:
    """Refuse, before anything starts, a --journal folder that is not a new place to record."""
    if journal.exists() and not journal.is_dir():
        fail(f"--journal {journal}: is a file; expected a folder for the session (a new or empty one)")
    taken = [name for name in SESSION_FILES if (journal / name).exists() or (journal / name).is_symlink()]
    if taken:
        fail(f"--journal {journal}: already holds {', '.join(taken)}; choose another folder (nothing was overwritten)")
    existing = journal
    while not existing.exists():  # the folder is made when the call starts: check where it will go
        if existing.parent == existing:
            break
        existing = existing.parent
    if not existing.is_dir():
        fail(f"--journal {journal}: {existing} is a file; expected a folder to record into")
    if not os.access(existing, os.W_OK | os.X_OK):
        fail(f"--journal {journal}: {existing} is not writable")


def _journal_problem(exc: OSError, journal: Path | None) -> str | None:
    """The one-line message for a failure to create the session folder or its files."""
    if journal is None or exc.filename is None:
        return None
    try:
        Path(exc.filename).resolve().relative_to(journal.resolve())
    except ValueError:
        return None
    return f"--journal {journal}: cannot record there: {exc.strerror or exc}"


@app.command("rehearse")
def rehearse(
    flow: Annotated[str, typer.Argument(help="A flow file, or the name of a flow shipped with Lull.")] = DEFAULT_FLOW,
    backend: Annotated[str, typer.Option("--backend", help="audio, file, text, pipecat or livekit (default: audio where a device exists, else text). pipecat: the voice loop is a Pipecat pipeline (the pipecat extra), on --caller or the devices; livekit: a LiveKit AgentSession (the livekit extra), on --caller or the devices.")] = "auto",
    headless: Annotated[bool, typer.Option("--headless", help="No TUI: print the live event stream.")] = False,
    journal: Annotated[
        Path | None, typer.Option("--journal", metavar="DIR", help="Record the session in DIR (a new folder): journal, mic.wav, out.wav.")
    ] = None,
    caller: Annotated[Path | None, typer.Option("--caller", help="file, pipecat and livekit backends: the caller's audio (a WAV file).")] = None,
    corpus: Annotated[Path | None, typer.Option("--corpus", help="The corpus screen's journals (F11): a folder of session folders or archives, or an archive. Default: ./recordings.")] = None,
    input_device: Annotated[str | None, typer.Option("--input-device", help="audio backend: microphone name or index.")] = None,
    output_device: Annotated[str | None, typer.Option("--output-device", help="audio backend: speaker name or index.")] = None,
    voice: Annotated[str | None, typer.Option("--voice", help="Another piper voice (.onnx with its .onnx.json).")] = None,
    stt_model: Annotated[str | None, typer.Option("--stt-model", help="Another faster-whisper model: a size name or a directory.")] = None,
    verbose: Annotated[bool, typer.Option("--verbose", "-v", help="Show every trace record.")] = False,
    no_aec: Annotated[bool, typer.Option("--no-aec", help="audio backend: no echo cancellation (use with headphones; the echo is still measured).")] = False,
    keep_secret_audio: Annotated[
        bool, typer.Option("--keep-secret-audio", help="Keep redacted values audible in mic.wav and out.wav (masked by default).")
    ] = False,
    line: Annotated[str | None, typer.Option("--line", metavar="pstn", help="The call on a telephone line (8 kHz G.711 mu-law, 20 ms packets) both ways; mic.wav is what the agent heard from the line, out.wav what the caller heard. On the file and audio backends, and on pipecat and livekit with --caller; not with --telephony (a Twilio stream is its own line), nor on the text backend.")] = None,
    line_noise_dbfs: Annotated[float | None, typer.Option("--line-noise-dbfs", help="With --line: the line's noise floor, dBFS RMS (default -45).")] = None,
    line_loss: Annotated[float | None, typer.Option("--line-loss", help="With --line: the fraction of 20 ms packets lost, concealed by the last one (default 0).")] = None,
    line_jitter_ms: Annotated[float | None, typer.Option("--line-jitter-ms", help="With --line: the packets' jitter (mean transit variation), absorbed by a fixed jitter buffer that adds latency (default 0).")] = None,
    line_seed: Annotated[int | None, typer.Option("--line-seed", help="With --line: the seed of the line's noise, losses and jitter (default 0); the same seed, the same audio.")] = None,
    telephony: Annotated[str | None, typer.Option("--telephony", metavar="twilio", help="pipecat backend with --caller: the caller on a Twilio Media Stream (8 kHz mu-law over a websocket on 127.0.0.1), through Pipecat's websocket server transport and TwilioFrameSerializer; out.wav is what the phone played (8 kHz).")] = None,
) -> None:
    """Rehearse a flow live in the console (or --headless: print the event stream).

    Typed lines are caller turns; in headless mode, lines starting with / inject
    incidents (/fail input, /recover input, /dup, /hangup, /tool NAME slow, /quit).

    Examples:
      lull rehearse
      lull rehearse my_flow.json --journal takes/1
      lull rehearse --backend file --caller caller.wav --headless --journal t2
      lull rehearse --backend file --caller caller.wav --line pstn --line-loss 0.02 --headless
      lull rehearse --backend pipecat --caller caller.wav --line pstn --headless
      lull rehearse --backend audio --line pstn
      lull rehearse --backend pipecat --caller caller.wav --headless --journal t3
      lull rehearse --backend pipecat --telephony twilio --caller c.wav --headless
      lull rehearse --backend livekit --caller caller.wav --headless --journal t4
      printf 'hold on\\n4821\\nyes\\n' | lull rehearse --backend text --headless
    """
    import asyncio

    from sessions.live import LiveSession

    from ..headless import HELP, rehearse_headless

    if backend not in ("auto", "audio", "file", "text", "pipecat", "livekit"):
        fail(f"--backend {backend}: expected audio, file, text, pipecat or livekit")
    if backend == "file" and caller is None:
        fail("--backend file needs --caller caller.wav (the caller's audio)")
    line_settings = line_from_options(line, line_noise_dbfs, line_loss, line_jitter_ms, line_seed, backend,
                                      caller=caller, telephony=telephony)
    check_telephony(telephony, backend, caller)
    if backend == "livekit":
        try:
            from voices.livekit import quiet_livekit_logs
        except ImportError as exc:
            fail(str(exc))
        quiet_livekit_logs()
    if corpus is not None and not corpus.exists():
        fail(f"--corpus {corpus}: no such folder or archive (a folder of session folders or archives, or an archive)")
    if backend == "pipecat":
        quiet_pipecat_logs()
        try:
            import voices.pipecat  # noqa: F401
        except ImportError as exc:
            fail(str(exc))
    if backend in ("pipecat", "livekit"):
        if caller is None:  # the devices, then: checked before any model loads
            from voices.audio import AudioUnavailable, resolve_device

            try:
                resolve_device(input_device, "input")
                resolve_device(output_device, "output")
            except AudioUnavailable as exc:
                fail(str(exc))
    if caller is not None:
        _check_caller_recording(caller)  # before any model loads, as --journal is checked
    if journal is not None:
        check_journal_folder(journal)
    if not headless and not (sys.stdin.isatty() and sys.stdout.isatty()):
        fail("the console needs a terminal; use --headless to print the event stream instead")
    try:
        compiled = load_flow(flow)
    except FlowFileError as exc:
        fail(str(exc))
    chosen, notice = _choose_backend(backend, input_device, output_device)
    if line_settings is not None and chosen == "text":  # --backend auto, and no audio device here
        fail(f"--line {line}: {notice.removeprefix('Text backend (no audio here): ')}; a typed call has no line "
             "(--backend file --caller caller.wav puts a recorded caller on one)")
    if chosen != "text":
        _start_matcher_build(compiled)  # in a thread, while whisper and piper load
    the_backend = _make_backend(chosen, caller, journal, input_device, output_device, voice, stt_model, aec=not no_aec,
                                keep_secret_audio=keep_secret_audio, line=line_settings, telephony=telephony)
    if keep_secret_audio and journal is not None and chosen != "text":
        print_text("warning: --keep-secret-audio: mic.wav and out.wav will hold redacted values (the journal does not)", console=err)
    if not headless:
        from ..app import LullApp

        path = None if library_flow_path(flow) is not None else resolve_flow(flow)
        def another_backend():
            # a restarted call gets a new backend on the same devices and loaded models;
            # the console gives it its own journal folder
            return _make_backend(
                chosen, caller, None, input_device, output_device, voice, stt_model,
                aec=not no_aec, keep_secret_audio=keep_secret_audio, models=getattr(the_backend, "models", None),
                line=line_settings, telephony=telephony,
            )

        LullApp(
            compiled, flow_path=path, backend=the_backend, journal_dir=journal, notice=notice, verbose=verbose,
            backend_factory=another_backend, corpus_dir=corpus,
        ).run()
        return
    if notice:
        print_text(notice, console=err)
    if telephony is not None:
        print_text(f"on a {telephony} media stream: Pipecat's websocket server transport and TwilioFrameSerializer "
                   "on 127.0.0.1, a local phone playing the caller (8 kHz mu-law, 20 ms messages)", console=err)
    if line_settings is not None:
        print_text(the_backend.line.summary(), console=err)
    # the caller's words, prompts and flow names are printed as they are, never as markup
    print_text(("Lull", "bold"), f": rehearsing {compiled.spec.name} on the {chosen} backend. Commands:\n{HELP}")

    # at a terminal the stream is a screen and shows values as the console does; piped
    # or redirected it is a log, and a log is redacted like the journal (G6)
    redact = not sys.stdout.isatty()

    def line(who: str, text: str) -> None:
        if redact:
            runtime = session.runtime
            text = runtime.redact_heard(text) if who == "caller" else runtime.redact({"kind": "prompt", "text": text})["text"]
        print_text((f"{who:>6} >", "bold"), f" {text}")

    the_backend.on_line = line
    session = LiveSession(compiled, the_backend, journal_dir=journal)
    built = getattr(the_backend.matcher, "get", None)  # a matcher still building (text backend)
    if built is not None:
        # headless input is a script: a turn that waited for its matcher would fall
        # behind the commands written after it (`hold on` then `/fail input`)
        built()
    try:
        outcome = asyncio.run(
            rehearse_headless(
                session,
                the_backend.say,
                write=lambda text: print_text(text),
                verbose=verbose,
                speaking=lambda: the_backend.speaking,
                redact=redact,
            )
        )
    except OSError as exc:
        problem = _journal_problem(exc, journal)
        if problem is None:
            raise
        fail(problem)
    waits = [lat.as_dict() for lat in getattr(the_backend, "latencies", [])]
    # on a telephone line, the caller waits the line's round trip more than the agent sees
    key = "caller_wait_on_line_ms" if any("caller_wait_on_line_ms" in w for w in waits) else "perceived_gap_ms"
    gaps = [g for g in (w.get(key) for w in waits) if g is not None]
    if gaps:  # each turn's wait was shown as it happened; the call's, in one line
        print_text(f"caller's wait over {len(gaps)} answered turns{' (on the line)' if key != 'perceived_gap_ms' else ''}: "
                   f"median {statistics.median(gaps) / 1000:.2f} s, longest {max(gaps) / 1000:.2f} s")
    carrier = getattr(the_backend, "carrier", None)
    if carrier is not None:  # on a phone: the wait at the caller's ear, measured by the phone
        at_phone = [w for w in carrier.phone.caller_waits_ms() if w is not None]
        if at_phone:
            print_text(f"caller's wait at the phone over {len(at_phone)} answered utterances: "
                       f"median {statistics.median(at_phone) / 1000:.2f} s, longest {max(at_phone) / 1000:.2f} s")
    print_text(f"call ended: {outcome or 'stopped'}" + (f"; session recorded in {journal}" if journal else ""))


def line_from_options(line, noise_dbfs, loss, jitter_ms, seed, backend: str | None = None, *,
                      caller: Path | None = None, telephony: str | None = None):
    """The telephone line `--line` and its options ask for (None: no line), refused in
    one line before any model loads. `backend`, `caller`, `telephony`: `lull
    rehearse`'s; a line needs a backend with audio (a framework's with a recorded caller)
    and no telephony transport."""
    from voices.line.pstn import LINES, LineError, LineSettings

    options = {"--line-noise-dbfs": noise_dbfs, "--line-loss": loss, "--line-jitter-ms": jitter_ms, "--line-seed": seed}
    if line is None:
        given = [name for name, value in options.items() if value is not None]
        if given:
            fail(f"{given[0]} needs --line pstn (the call on a telephone line)")
        return None
    if line not in LINES:
        fail(f"--line {line}: expected {' or '.join(LINES)}")
    if backend == "text":
        fail(f"--line {line}: the text backend has no audio to put on a telephone line; "
             "use --backend file, audio, pipecat or livekit (pipecat and livekit with --caller)")
    if telephony is not None:
        fail(f"--line {line} and --telephony {telephony}: a {telephony} media stream is already the call's telephone line "
             "(8 kHz mu-law); use one or the other")
    if backend in ("pipecat", "livekit") and caller is None:
        # the frameworks' device transports are not on a line: the person at the laptop
        # is put on one by the audio backend
        fail(f"--line {line}: on --backend {backend} the line needs a recorded caller (--caller caller.wav); "
             "at the laptop's microphone and speaker, --backend audio takes a line")
    settings = {"noise_dbfs": noise_dbfs, "loss": loss, "jitter_ms": jitter_ms, "seed": seed}
    try:
        return LineSettings(kind=line, **{k: v for k, v in settings.items() if v is not None})
    except LineError as exc:
        fail(str(exc))


def check_telephony(telephony: str | None, backend: str, caller: Path | None) -> None:
    """`--telephony`, refused in one line before any model loads unless it is a carrier
    Lull knows, on the pipecat backend, with a recorded caller to put on the phone."""
    if telephony is None:
        return
    if telephony != "twilio":  # voices.pipecat.telephony.TELEPHONY, without importing Pipecat
        fail(f"--telephony {telephony}: expected twilio (Pipecat's TwilioFrameSerializer over a local websocket)")
    if backend != "pipecat":
        fail(f"--telephony {telephony}: only the pipecat backend runs a telephony transport (--backend pipecat --caller caller.wav), not --backend {backend}")
    if caller is None:
        fail(f"--telephony {telephony} needs --caller caller.wav (the recording the phone plays into the call)")


def _check_caller_recording(caller: Path) -> None:
    if not caller.is_file():
        fail(f"--caller {caller}: " + ("is a folder" if caller.is_dir() else "no such file") + "; expected a WAV recording of the caller")
    import soundfile

    try:
        info = soundfile.info(str(caller))
    except (RuntimeError, OSError) as exc:  # soundfile's LibsndfileError is a RuntimeError
        reason = str(exc).split(": ")[-1].strip() or type(exc).__name__
        fail(f"--caller {caller}: not an audio file Lull can read ({reason}); expected a WAV recording of the caller")
    if info.frames == 0:
        fail(f"--caller {caller}: the recording is empty (0 samples); expected a WAV recording of the caller")


def _choose_backend(backend: str, input_device: str | None, output_device: str | None) -> tuple[str, str]:
    """The backend to use and, when it is not what was asked for, a notice saying why."""
    if backend in ("text", "file", "pipecat", "livekit"):
        return backend, ("Text backend: type the caller's turns below." if backend == "text" else "")
    from voices.audio import TEXT_BACKEND_HINT, AudioUnavailable, resolve_device

    try:
        resolve_device(input_device, "input")
        resolve_device(output_device, "output")
    except AudioUnavailable as exc:
        if backend == "audio":
            fail(str(exc))
        # already on the text backend: the hint to choose it would send the user in a circle
        reason = str(exc).replace(f"; {TEXT_BACKEND_HINT}", "")
        return "text", f"Text backend (no audio here): {reason}"
    return "audio", ""


def _start_matcher_build(compiled) -> None:
    """Begin the voice backends' intent matcher for this flow; the backend's attach
    takes it over (voices.understanding.interpret.make_matcher_soon). A missing model is left for the
    backend to report."""
    from voices.backends.voice import VoiceModels
    from voices.understanding.interpret import InterpreterError, make_matcher_soon

    try:
        make_matcher_soon(flow_intents(compiled.spec), None, VoiceModels.matcher_kind)  # type: ignore[arg-type]
    except InterpreterError:
        pass


def _make_backend(
    chosen, caller, journal, input_device, output_device, voice, stt_model, aec=True, keep_secret_audio=False, models=None,
    line=None, telephony=None,
):
    from voices.backends.text import TextBackend

    if chosen == "text":
        # typed turns understood as the voice backends understand spoken ones
        return TextBackend(matcher_kind="classifier")
    from voices.audio import AudioUnavailable, resolve_device
    from voices.backends import AudioBackend, FileBackend, VoiceModels
    from voices.stt import RecognizerError
    from voices.tts import VoiceError

    if models is None:
        with err.status("loading the voice and the recognizer…"):
            try:
                models = VoiceModels.load(voice_path=voice, stt_model=stt_model)
            except (VoiceError, RecognizerError) as exc:
                fail(str(exc))
    if chosen == "file":
        try:
            return FileBackend(models, caller, record_dir=journal, keep_secret_audio=keep_secret_audio, line=line)
        except (ValueError, OSError) as exc:
            fail(str(exc))
    if chosen == "livekit":
        from voices.livekit.backend import LiveKitBackend

        if caller is not None:
            return LiveKitBackend(models, caller, keep_secret_audio=keep_secret_audio, line=line)
        try:  # no recorded caller: the microphone and speaker, checked before the call
            return LiveKitBackend(models, input_device=resolve_device(input_device, "input"),
                                  output_device=resolve_device(output_device, "output"), aec=aec,
                                  keep_secret_audio=keep_secret_audio)
        except AudioUnavailable as exc:
            fail(str(exc))
    if chosen == "pipecat":
        from voices.pipecat.backend import PipecatBackend

        if caller is not None:
            return PipecatBackend(models, caller, keep_secret_audio=keep_secret_audio, telephony=telephony, line=line)
        try:  # no recorded caller: the microphone and speaker, checked before the call
            return PipecatBackend(models, input_device=resolve_device(input_device, "input"),
                                  output_device=resolve_device(output_device, "output"), aec=aec)
        except AudioUnavailable as exc:
            fail(str(exc))
    try:
        return AudioBackend(
            models,
            input_device=resolve_device(input_device, "input"),
            output_device=resolve_device(output_device, "output"),
            record_dir=journal,
            aec=aec,
            keep_secret_audio=keep_secret_audio,
            line=line,
        )
    except (AudioUnavailable, OSError) as exc:
        fail(str(exc))
