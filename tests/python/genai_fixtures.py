"""Tiny genai model folders for the onyx.genai tests: a random 2-layer
Llama (hidden 64) with a small byte-level BPE tokenizer, exported by onyx's
model builder (no torch needed) or by onnxruntime-genai's (its folders must
run unchanged; that one needs torch and transformers, and skips without)."""

import subprocess
import sys
from pathlib import Path

import pytest


BUILDERS = ["onyx", "onnxruntime-genai"]


def make_tiny_folder(root: Path, builder: str = "onyx") -> Path:
    """The genai folder of a tiny random Llama, exported by `builder` (one of BUILDERS)."""
    if builder == "onyx":
        from genai_models import build_tiny_model

        return Path(build_tiny_model(root, "llama", "fp32", pad_token_id=0))
    return _og_built_folder(root)


def _og_built_folder(root: Path) -> Path:
    """Writes ROOT/hf (the Hugging Face model) and ROOT/genai (onnxruntime-genai's folder); returns the latter."""
    torch = pytest.importorskip("torch", reason="making the tiny genai model needs torch")
    transformers = pytest.importorskip("transformers", reason="making the tiny genai model needs transformers")
    tokenizers = pytest.importorskip("tokenizers")
    pytest.importorskip("onnxruntime_genai", reason="the tiny genai model is exported with onnxruntime-genai's builder")
    hf = root / "hf"
    torch.manual_seed(0)
    config = transformers.LlamaConfig(
        vocab_size=512, hidden_size=64, intermediate_size=128, num_hidden_layers=2, num_attention_heads=4,
        num_key_value_heads=2, max_position_embeddings=256, bos_token_id=1, eos_token_id=2, pad_token_id=0,
    )
    transformers.LlamaForCausalLM(config).save_pretrained(hf)
    from tokenizers import decoders, models, pre_tokenizers, trainers

    tok = tokenizers.Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    text = ["The quick brown fox jumps over the lazy dog.", "Hello world, how are you today? I am fine, thank you.",
            "Once upon a time there was a little model that generated text."] * 50
    trainer = trainers.BpeTrainer(vocab_size=400, special_tokens=["<pad>", "<s>", "</s>"],
                                  initial_alphabet=pre_tokenizers.ByteLevel.alphabet())
    tok.train_from_iterator(text, trainer)
    transformers.PreTrainedTokenizerFast(tokenizer_object=tok, bos_token="<s>", eos_token="</s>", pad_token="<pad>").save_pretrained(hf)
    out = root / "genai"
    subprocess.run([sys.executable, "-m", "onnxruntime_genai.models.builder", "-i", str(hf), "-o", str(out), "-p", "fp32", "-e", "cpu"],
                   check=True, capture_output=True)
    return out
