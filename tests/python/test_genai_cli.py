"""`onyx generate` and `onyx chat` on a tiny genai folder: the tokens
printed equal onnxruntime-genai's greedy generation; bad folders and
prompts are one error line and exit status 2."""

import subprocess

import numpy as np
import pytest

from bindings_util import onyx_command
from genai_fixtures import BUILDERS, make_tiny_folder

og = pytest.importorskip("onnxruntime_genai")


@pytest.fixture(scope="module")
def folder(tmp_path_factory):
    return make_tiny_folder(tmp_path_factory.mktemp("genai_cli"))


def run(*args, stdin=None):
    return subprocess.run([str(onyx_command()), *args], input=stdin, capture_output=True, text=True, timeout=120)


def og_greedy(folder, tokens, max_length):
    model = og.Model(str(folder))
    params = og.GeneratorParams(model)
    params.set_search_options(max_length=max_length)
    generator = og.Generator(model, params)
    generator.append_tokens(np.array(tokens, np.int32))
    while not generator.is_done():
        generator.generate_next_token()
    return [int(t) for t in generator.get_sequence(0)[len(tokens):]]


def test_generate_prints_og_tokens_and_speeds(folder):
    result = run("generate", str(folder), "--tokens", "344,353,20", "--ids", "--max_length", "40")
    assert result.returncode == 0, result.stderr
    lines = result.stdout.strip().splitlines()
    assert [int(t) for t in lines[0].split()] == og_greedy(folder, [344, 353, 20], 40)
    assert "prompt tokens 3, prefill" in result.stdout and "new tokens 37, decode" in result.stdout


def test_generate_streams_the_text_of_og_tokens(folder):
    """A text prompt goes through the folder's tokenizer.json (onyx's C++
    tokenizer) and the reply streams as text: og's greedy tokens, decoded."""
    result = run("generate", str(folder), "--prompt", "Hello world", "--max_length", "40")
    assert result.returncode == 0, result.stderr
    text = result.stdout.split("\n\nprompt tokens")[0]
    tokenizers = pytest.importorskip("tokenizers")
    tokenizer = tokenizers.Tokenizer.from_file(str(folder / "tokenizer.json"))
    prompt = tokenizer.encode("Hello world").ids
    assert text == tokenizer.decode(og_greedy(folder, prompt, 40))
    assert f"prompt tokens {len(prompt)}, prefill" in result.stdout


def test_chat_keeps_the_cache_between_turns(folder):
    result = run("chat", str(folder), "--ids", "--max_length", "60", "--reply_tokens", "12", stdin="344,353\n20,21\n")
    assert result.returncode == 0, result.stderr
    first, second = [[int(t) for t in line.split()] for line in result.stdout.strip().splitlines()]
    assert len(first) == 12 and first == og_greedy(folder, [344, 353], 14)
    # The second turn continues the first: the cache kept, nothing run again.
    assert second == og_greedy(folder, [344, 353] + first + [20, 21], 2 + 12 + 2 + 12)


@pytest.mark.parametrize(
    "args, message",
    [
        (["generate", "/nonexistent/folder", "--tokens", "1"], "FOLDER '/nonexistent/folder' does not exist"),
        (["generate", "{folder}", "--tokens", "3,4,5,6", "--max_length", "3"], "more than max_length 3"),
        (["generate", "{folder}", "--tokens", "1", "--top_p", "2"], "--top_p"),
        (["generate", "{folder}"], "--prompt TEXT or --tokens IDS"),
    ],
)
def test_errors_are_one_line_and_exit_2(folder, args, message):
    result = run(*[a.replace("{folder}", str(folder)) for a in args])
    assert result.returncode == 2
    assert message in result.stderr
    assert "Traceback" not in result.stderr and "terminate" not in result.stderr


def test_missing_config_key_exits_2(folder, tmp_path):
    import json
    import shutil

    broken = tmp_path / "broken"
    shutil.copytree(folder, broken)
    config = json.loads((broken / "genai_config.json").read_text())
    del config["model"]["vocab_size"]
    (broken / "genai_config.json").write_text(json.dumps(config))
    result = run("generate", str(broken), "--tokens", "1")
    assert result.returncode == 2
    assert "genai_config.json: model.vocab_size: the key is missing" in result.stderr
