"""Text generation with onnxruntime-genai's Python API: scripts written for
``onnxruntime_genai`` run with ``import onyx.genai as og``::

    import onyx.genai as og

    model = og.Model("qwen-int4")            # a folder with genai_config.json
    tokenizer = og.Tokenizer(model)
    params = og.GeneratorParams(model)
    params.set_search_options(max_length=128)
    generator = og.Generator(model, params)
    generator.append_tokens(tokenizer.encode("Hello"))
    stream = tokenizer.create_stream()
    while not generator.is_done():
        generator.generate_next_token()
        print(stream.decode(generator.get_next_tokens()[0]), end="", flush=True)

The model, its KV cache and the search run in onyx (C++, through the C API
include/onyx/onyx_genai_c.h); the tokenizer here is the ``tokenizers``
package over the folder's tokenizer.json. Errors are RuntimeError with a
message that names the file, key or argument.
"""

import json as _json

import numpy as _np

from .. import _onyx
from ._tokenizer import Tokenizer, TokenizerStream

_c = _onyx.genai

__all__ = ["Config", "Model", "GeneratorParams", "Generator", "Tokenizer", "TokenizerStream"]


class Config:
    """FOLDER/genai_config.json, changed before the model loads."""

    def __init__(self, folder):
        self.folder = str(folder)
        self._config = _c.Config(self.folder)

    def overlay(self, json):
        """Merges a JSON object (text or dict) into the configuration."""
        if not isinstance(json, str):
            json = _json.dumps(json)
        self._config.overlay(json)

    def clear_providers(self):
        self._config.clear_providers()

    def append_provider(self, provider):
        self._config.append_provider(str(provider))


class Model:
    """The decoder of a genai folder (or of a Config)."""

    def __init__(self, folder_or_config):
        if isinstance(folder_or_config, Config):
            self.folder = folder_or_config.folder
            self._model = _c.Model(folder_or_config._config)
        else:
            self.folder = str(folder_or_config)
            self._model = _c.Model(self.folder)

    @property
    def type(self):
        """model.type of genai_config.json ("llama", "qwen2", ...)."""
        return self._model.type

    def kv_cache_bytes(self, batch_size=1, max_length=0):
        """Bytes a generator's KV cache takes (onyx's own)."""
        return self._model.kv_cache_bytes(int(batch_size), int(max_length))


_BOOL_OPTIONS = {"do_sample", "early_stopping", "past_present_share_buffer"}


class GeneratorParams:
    def __init__(self, model):
        self._model = model
        self._params = _c.GeneratorParams(model._model)
        self.batch_size = 1

    def set_search_options(self, **options):
        """onnxruntime-genai's search options by name (max_length=..., top_p=..., do_sample=...)."""
        for name, value in options.items():
            if name in _BOOL_OPTIONS or isinstance(value, bool):
                self._params.set_bool(name, bool(value))
            else:
                self._params.set_number(name, float(value))
            if name == "batch_size":
                self.batch_size = int(value)

    def try_graph_capture_with_max_batch_size(self, max_batch_size):  # og's API; nothing to do on the CPU
        pass


class Generator:
    def __init__(self, model, params):
        self._model = model
        self._params = params
        self._generator = _c.Generator(model._model, params._params)

    def append_tokens(self, tokens):
        """Tokens of every sequence: a 1-D array or list (batch_size 1, or
        batch_size rows laid end to end), or a 2-D [batch_size, length] array
        padded with the pad token id."""
        if hasattr(tokens, "as_numpy"):
            tokens = tokens.as_numpy()
        array = _np.ascontiguousarray(_np.asarray(tokens), dtype=_np.int32)
        if array.ndim == 2 and array.shape[0] != self._params.batch_size:
            raise RuntimeError(
                f"Generator.append_tokens: {array.shape[0]} rows given, but the search option batch_size is "
                f"{self._params.batch_size}"
            )
        if array.ndim not in (1, 2):
            raise RuntimeError(f"Generator.append_tokens: expected a 1-D or 2-D array of token ids, got {array.ndim}-D")
        self._generator.append_tokens(array.reshape(-1))

    def generate_next_token(self):
        self._generator.generate_next_token()

    def is_done(self):
        return self._generator.is_done()

    def get_next_tokens(self):
        return self._generator.get_next_tokens()

    def get_sequence(self, index):
        return self._generator.get_sequence(int(index))

    def rewind_to(self, new_length):
        self._generator.rewind_to(int(new_length))

    def get_logits(self):
        """Logits of the last step, [sequences, 1, vocab] as onnxruntime-genai."""
        logits = self._generator.get_logits()
        vocab = self._vocab_size()
        return logits.reshape(-1, 1, vocab)

    def _vocab_size(self):
        if not hasattr(self, "_vocab"):
            with open(f"{self._model.folder}/genai_config.json", encoding="utf-8") as f:
                self._vocab = int(_json.load(f)["model"]["vocab_size"])
        return self._vocab
