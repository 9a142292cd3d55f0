"""No network at run time: the switches, set before any model library loads.

Lull promises that nothing is sent anywhere while it runs. Two libraries it loads
would otherwise reach out:

- onnxruntime (piper's voice and both Silero VADs run on it) ships Microsoft's 1DS
  telemetry, on by default in the PyPI wheels. At import it writes a persistent device
  id and an event store into the user's cache folder
  ($XDG_CACHE_HOME or ~/.cache, under Microsoft/DeveloperTools/.onnxruntime) and about
  9 s later resolves its events host. `ORT_DISABLE_TELEMETRY=1` stops the uploader, the
  events and the device id for the process lifetime, but it is read once, when the
  library loads: set after `import onnxruntime` it does nothing, and
  `onnxruntime.disable_telemetry_events()` only drops later events (measured: the device
  id and the DNS lookup still happen).
- huggingface_hub (faster-whisper looks model names up through it) reads its offline
  and telemetry switches when it is imported.

`go_offline()` runs when the `voices` package is imported, and every module that loads
onnxruntime, piper, faster-whisper or wordllama lives in `voices`, so the switches are
in place first. They are forced, not defaulted: an inherited setting cannot undo the
promise. Child processes inherit them too.
"""

from __future__ import annotations

import os

OFFLINE_ENVIRONMENT = {
    "ORT_DISABLE_TELEMETRY": "1",
    "HF_HUB_OFFLINE": "1",  # never download a model; fail fast instead
    "HF_HUB_DISABLE_TELEMETRY": "1",
}


def go_offline() -> None:
    """Set the switches in this process's environment (idempotent, cheap)."""
    os.environ.update(OFFLINE_ENVIRONMENT)
