"""onnxruntime-genai's Tokenizer and TokenizerStream over the ``tokenizers``
package and the model folder's tokenizer.json (and tokenizer_config.json
for add_bos_token / add_eos_token)."""

import json
import os

import numpy as np


def _load_tokenizers():
    try:
        import tokenizers
    except ImportError as e:  # pragma: no cover - tokenizers is a dependency of onyx.genai
        raise RuntimeError("onyx.genai.Tokenizer needs the 'tokenizers' package (pip install tokenizers)") from e
    return tokenizers


def _special_id(tokenizer, config, key):
    value = config.get(key)
    if isinstance(value, dict):
        value = value.get("content")
    if isinstance(value, str):
        return tokenizer.token_to_id(value)
    return None


class Tokenizer:
    def __init__(self, model_or_folder):
        folder = getattr(model_or_folder, "folder", model_or_folder)
        path = os.path.join(str(folder), "tokenizer.json")
        if not os.path.isfile(path):
            raise RuntimeError(f"Tokenizer: '{folder}' has no tokenizer.json")
        tokenizers = _load_tokenizers()
        try:
            self._tokenizer = tokenizers.Tokenizer.from_file(path)
        except Exception as e:
            raise RuntimeError(f"Tokenizer: cannot read {path}: {e}") from e
        config = {}
        config_path = os.path.join(str(folder), "tokenizer_config.json")
        if os.path.isfile(config_path):
            with open(config_path, encoding="utf-8") as f:
                config = json.load(f)
        self._bos = _special_id(self._tokenizer, config, "bos_token")
        self._eos = _special_id(self._tokenizer, config, "eos_token")
        self._pad = _special_id(self._tokenizer, config, "pad_token")
        # Batches are padded with the id the generator strips: genai_config.json's, as onnxruntime-genai does.
        genai_config = os.path.join(str(folder), "genai_config.json")
        if os.path.isfile(genai_config):
            with open(genai_config, encoding="utf-8") as f:
                pad = json.load(f).get("model", {}).get("pad_token_id")
            if isinstance(pad, int):
                self._pad = pad
        # As onnxruntime-genai: special tokens only where tokenizer_config.json asks for them.
        self._add_bos = bool(config.get("add_bos_token", False)) and self._bos is not None
        self._add_eos = bool(config.get("add_eos_token", False)) and self._eos is not None

    def encode(self, text):
        ids = self._tokenizer.encode(text, add_special_tokens=False).ids
        if self._add_bos and (not ids or ids[0] != self._bos):
            ids = [self._bos] + ids
        if self._add_eos:
            ids = ids + [self._eos]
        return np.asarray(ids, dtype=np.int32)

    def encode_batch(self, texts):
        """[len(texts), longest] int32, shorter rows padded on the right with the pad id
        (genai_config.json's pad_token_id, else tokenizer_config.json's pad token, else eos)."""
        rows = [self.encode(t) for t in texts]
        width = max((len(r) for r in rows), default=0)
        pad = self._pad if self._pad is not None else (self._eos if self._eos is not None else 0)
        out = np.full((len(rows), width), pad, dtype=np.int32)
        for i, r in enumerate(rows):
            out[i, : len(r)] = r
        return out

    def decode(self, tokens):
        return self._tokenizer.decode([int(t) for t in np.asarray(tokens).reshape(-1)], skip_special_tokens=True)

    def decode_batch(self, sequences):
        return [self.decode(s) for s in sequences]

    def to_token_id(self, token):
        found = self._tokenizer.token_to_id(token)
        return -1 if found is None else found

    def create_stream(self):
        return TokenizerStream(self)


class TokenizerStream:
    """Decodes tokens that arrive one at a time: each call returns the text
    the new token completes (nothing while a UTF-8 character is unfinished)."""

    def __init__(self, tokenizer):
        self._tokenizer = tokenizer
        self._ids = []
        self._emitted = ""

    def decode(self, token):
        self._ids.append(int(token))
        text = self._tokenizer.decode(self._ids)
        if text.endswith("\ufffd"):
            return ""
        if not text.startswith(self._emitted):
            # The decoder changed earlier text (a leading space dropped): start the comparison over.
            self._ids = [int(token)]
            self._emitted = ""
            text = self._tokenizer.decode(self._ids)
        new = text[len(self._emitted) :]
        self._emitted = text
        return new
