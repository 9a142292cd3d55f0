"""G.711 mu-law, encoded and decoded in numpy (the `audioop` module is deprecated and gone
from Python 3.13).

The arithmetic is the ITU's own reference implementation (ITU-T G.191, the Software
Tools Library's `g711.c`, `ulaw_compress` and `ulaw_expand`), vectorised:

- encoding takes 16-bit linear samples to 14 bits (the two low bits are below G.711's
  resolution), adds the bias of 33 and finds the segment (0-7: which power of two the
  biased magnitude is in) and the four bits below its leading one; the code is the
  sign (1 for positive), the segment and those four bits, all inverted, so silence is
  0xFF and a line of zeros is not a run of zero bytes. Negative samples take their
  one's complement first, so -1 is "negative zero", 0x7F;
- decoding puts each code back at the middle of its step: 0xFF and 0x7F -> 0, 0x80 ->
  +32124 and 0x00 -> -32124 (the largest magnitude G.711 represents, in 16 bits).

Segment s (0-7) is quantised in 16 steps of 2^(s+3) in 16-bit units: 8 near silence,
1024 near full scale, so a round trip is off by at most half a step (plus the 3 the
14-bit truncation drops) and speech keeps a signal-to-error ratio near 38 dB over a
wide range of levels.

`audioop.lin2ulaw` differs on 508 of the 65,536 negative and positive inputs, all
negative and each one step away at a decision level: it takes a negative sample's
magnitude as -(x >> 2), where the reference takes the one's complement, so that -1 is
negative zero and -32768 mirrors +32767. The decoders agree on all 256 codes.
"""

from __future__ import annotations

import numpy as np

BIAS = 33  # in 14-bit units (0x84 = 132 in 16-bit)
CLIP = 0x1FFF  # the largest biased 14-bit magnitude
MAX_DECODED = 32124  # 0x80 and 0x00 decode to +-this


def pcm16(audio: np.ndarray) -> np.ndarray:
    """Float audio (full scale 1.0) as 16-bit samples, rounded and clipped."""
    return np.clip(np.round(np.asarray(audio, np.float64) * 32768.0), -32768, 32767).astype(np.int16)


def encode(samples: np.ndarray) -> np.ndarray:
    """16-bit linear samples (any integer array) -> G.711 mu-law codes (uint8)."""
    x = np.asarray(samples).astype(np.int32)
    # the 14-bit magnitude, biased: one's complement for negative samples
    magnitude = np.where(x < 0, (~x) >> 2, x >> 2) + BIAS
    magnitude = np.minimum(magnitude, CLIP)
    # the segment: 1 + the position of the leading one above bit 5 (segno in g711.c)
    segno = np.ones_like(magnitude)
    rest = magnitude >> 6
    for _ in range(7):
        more = rest != 0
        segno += more
        rest >>= 1
    high = 8 - segno
    low = 0x0F - ((magnitude >> segno) & 0x0F)
    code = (high << 4) | low
    code = np.where(x >= 0, code | 0x80, code)
    return code.astype(np.uint8)


def _expand_table() -> np.ndarray:
    codes = np.arange(256, dtype=np.int32)
    sign = np.where(codes < 0x80, -1, 1)
    inverted = (~codes) & 0xFF
    exponent = (inverted >> 4) & 0x07
    mantissa = inverted & 0x0F
    step = 4 << (exponent + 1)
    return (sign * ((0x80 << exponent) + step * mantissa + step // 2 - 4 * BIAS)).astype(np.int16)


DECODE_TABLE = _expand_table()  # code -> 16-bit linear sample


def decode(codes: np.ndarray) -> np.ndarray:
    """G.711 mu-law codes (uint8) -> 16-bit linear samples (int16)."""
    return DECODE_TABLE[np.asarray(codes, np.uint8)]


def round_trip(audio: np.ndarray) -> np.ndarray:
    """Float audio through the codec and back (float32, full scale 1.0)."""
    return decode(encode(pcm16(audio))).astype(np.float32) / 32768.0


__all__ = ["DECODE_TABLE", "MAX_DECODED", "decode", "encode", "pcm16", "round_trip"]
