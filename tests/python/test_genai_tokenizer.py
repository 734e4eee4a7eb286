"""onyx's tokenizer (src/genai/tokenizer.cc) against the `tokenizers` package.

Each fixture trains a small BPE model with `tokenizers` on text made here,
in one of the configurations real models ship (GPT-2, Qwen2, Llama 3 byte
level; Llama 2 / Mistral sentencepiece style), writes its tokenizer.json,
and the test compares onyx's ids, decoded text and streamed text with what
`tokenizers` gives. onyx is driven through the C API (onyx_genai_c.h) with
ctypes, from the built library: $ONYX_CORE_LIB, or libonyx.so found next to
the onyx package or in build/.
"""
import ctypes
import json
import os
import pathlib
import random

import pytest

tokenizers = pytest.importorskip("tokenizers", reason="the tokenizers package is the oracle of these tests")
from tokenizers import AddedToken, Regex, Tokenizer, decoders, models, normalizers, pre_tokenizers, processors, trainers  # noqa: E402

ROOT = pathlib.Path(__file__).resolve().parents[2]

GPT2_REGEX = r"'s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+"
LLAMA3_REGEX = (r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*"
                r"|\s*[\r\n]+|\s+(?!\S)|\s+")
QWEN2_REGEX = LLAMA3_REGEX.replace(r"\p{N}{1,3}", r"\p{N}")


def _find_library():
    candidates = []
    if os.environ.get("ONYX_CORE_LIB"):
        candidates.append(pathlib.Path(os.environ["ONYX_CORE_LIB"]))
    try:
        import onyx

        here = pathlib.Path(onyx.__file__).resolve().parent
        for parent in [here, *here.parents][:4]:
            candidates += [parent / "libonyx.so", parent / "libonyx_core.so"]
    except ImportError:
        pass
    candidates += [ROOT / "build" / "libonyx.so", ROOT / "build" / "libonyx_core.so"]
    for path in candidates:
        if path.is_file():
            return path
    return None


LIBRARY = _find_library()
pytestmark = pytest.mark.skipif(
    LIBRARY is None, reason="onyx's library (libonyx.so) is not built; set ONYX_CORE_LIB or build the onyx_core target"
)


class Onyx:
    """The tokenizer part of onyx_genai_c.h, through ctypes."""

    def __init__(self, path):
        lib = ctypes.CDLL(str(path))
        P = ctypes.c_void_p
        lib.OnyxGenaiResultGetError.restype = ctypes.c_char_p
        lib.OnyxGenaiResultGetError.argtypes = [P]
        lib.OnyxGenaiDestroyResult.argtypes = [P]
        lib.OnyxGenaiDestroyString.argtypes = [P]
        for name, args in {
            "OnyxGenaiCreateSequences": [ctypes.POINTER(P)],
            "OnyxGenaiCreateTokenizerFromFolder": [ctypes.c_char_p, ctypes.POINTER(P)],
            "OnyxGenaiTokenizerEncode": [P, ctypes.c_char_p, P],
            "OnyxGenaiTokenizerDecode": [P, ctypes.POINTER(ctypes.c_int32), ctypes.c_size_t, ctypes.POINTER(P)],
            "OnyxGenaiTokenizerToTokenId": [P, ctypes.c_char_p, ctypes.POINTER(ctypes.c_int32)],
            "OnyxGenaiTokenizerGetSpecialIds": [P] + [ctypes.POINTER(ctypes.c_int32)] * 3,
            "OnyxGenaiCreateTokenizerStream": [P, ctypes.POINTER(P)],
            "OnyxGenaiTokenizerStreamDecode": [P, ctypes.c_int32, ctypes.POINTER(P)],
            "OnyxGenaiAppendTokenSequence": [ctypes.POINTER(ctypes.c_int32), ctypes.c_size_t, P],
        }.items():
            getattr(lib, name).restype = P
            getattr(lib, name).argtypes = args
        for name in ["OnyxGenaiDestroySequences", "OnyxGenaiDestroyTokenizer", "OnyxGenaiDestroyTokenizerStream"]:
            getattr(lib, name).argtypes = [P]
        lib.OnyxGenaiSequencesCount.restype = ctypes.c_size_t
        lib.OnyxGenaiSequencesCount.argtypes = [P]
        lib.OnyxGenaiSequencesGetSequenceCount.restype = ctypes.c_size_t
        lib.OnyxGenaiSequencesGetSequenceCount.argtypes = [P, ctypes.c_size_t]
        lib.OnyxGenaiSequencesGetSequenceData.restype = ctypes.POINTER(ctypes.c_int32)
        lib.OnyxGenaiSequencesGetSequenceData.argtypes = [P, ctypes.c_size_t]
        self.lib = lib

    def check(self, result):
        if result:
            message = self.lib.OnyxGenaiResultGetError(result).decode()
            self.lib.OnyxGenaiDestroyResult(result)
            raise RuntimeError(message)


class OnyxTokenizer:
    def __init__(self, onyx, folder):
        self.onyx, self.lib = onyx, onyx.lib
        handle = ctypes.c_void_p()
        onyx.check(self.lib.OnyxGenaiCreateTokenizerFromFolder(str(folder).encode(), ctypes.byref(handle)))
        self.handle = handle

    def __del__(self):
        if getattr(self, "handle", None):
            self.lib.OnyxGenaiDestroyTokenizer(self.handle)

    def encode(self, text):
        sequences = ctypes.c_void_p()
        self.onyx.check(self.lib.OnyxGenaiCreateSequences(ctypes.byref(sequences)))
        try:
            self.onyx.check(self.lib.OnyxGenaiTokenizerEncode(self.handle, text.encode(), sequences))
            assert self.lib.OnyxGenaiSequencesCount(sequences) == 1
            n = self.lib.OnyxGenaiSequencesGetSequenceCount(sequences, 0)
            data = self.lib.OnyxGenaiSequencesGetSequenceData(sequences, 0)
            return [data[i] for i in range(n)]
        finally:
            self.lib.OnyxGenaiDestroySequences(sequences)

    def decode(self, ids):
        array = (ctypes.c_int32 * len(ids))(*ids)
        out = ctypes.c_void_p()
        self.onyx.check(self.lib.OnyxGenaiTokenizerDecode(self.handle, array, len(ids), ctypes.byref(out)))
        text = ctypes.string_at(out.value).decode("utf-8")
        self.lib.OnyxGenaiDestroyString(out)
        return text

    def stream(self, ids):
        stream = ctypes.c_void_p()
        self.onyx.check(self.lib.OnyxGenaiCreateTokenizerStream(self.handle, ctypes.byref(stream)))
        try:
            pieces = []
            for token in ids:
                out = ctypes.c_void_p()
                self.onyx.check(self.lib.OnyxGenaiTokenizerStreamDecode(stream, token, ctypes.byref(out)))
                pieces.append(ctypes.string_at(out.value).decode("utf-8"))
            return pieces
        finally:
            self.lib.OnyxGenaiDestroyTokenizerStream(stream)

    def token_to_id(self, token):
        out = ctypes.c_int32()
        self.onyx.check(self.lib.OnyxGenaiTokenizerToTokenId(self.handle, token.encode(), ctypes.byref(out)))
        return out.value

    def special_ids(self):
        ids = [ctypes.c_int32() for _ in range(3)]
        self.onyx.check(self.lib.OnyxGenaiTokenizerGetSpecialIds(self.handle, *[ctypes.byref(i) for i in ids]))
        return [i.value for i in ids]


@pytest.fixture(scope="module")
def onyx():
    return Onyx(LIBRARY)


# ---- text ------------------------------------------------------------------------

SYLLABLES = ["the", "an", "ing", "tion", "er", "qu", "st", "ou", "ly", "re", "pre", "ck", "es", "a", "o", "i"]
EXTRA = ["é", "ü", "ñ", "ß", "ø", "Ω", "Ж", "я", "中", "文", "字", "日本", "한국어", "😀", "🚀", "👍🏽", "e\u0301", "∑", "½", "٣"]


def random_word(rng):
    word = "".join(rng.choice(SYLLABLES) for _ in range(rng.randint(1, 3)))
    r = rng.random()
    if r < 0.1:
        word = word.capitalize()
    elif r < 0.15:
        word = word.upper()
    elif r < 0.25:
        word += rng.choice(EXTRA)
    return word


def training_text(seed=0, lines=600):
    rng = random.Random(seed)
    out = []
    for _ in range(lines):
        words = []
        for _ in range(rng.randint(3, 15)):
            r = rng.random()
            if r < 0.75:
                words.append(random_word(rng))
            elif r < 0.85:
                words.append(str(rng.randint(0, 100000)))
            elif r < 0.92:
                words.append(rng.choice([",", ".", "!", "?", "...", "(", ")", "'s", "'re", "--", ":", ";", '"']))
            else:
                words.append(rng.choice(EXTRA))
        out.append(" ".join(words))
    return out


def random_unicode(rng, length):
    chars = []
    for _ in range(length):
        r = rng.random()
        if r < 0.3:
            c = rng.randint(0x20, 0x7E)
        elif r < 0.4:
            c = rng.choice([0x9, 0xA, 0xD, 0x20, 0x20, 0xA0, 0x3000, 0x2009, 0x85])
        elif r < 0.6:
            c = rng.randint(0xA0, 0x2FFF)
        elif r < 0.75:
            c = rng.randint(0x3000, 0xD7FF)
        elif r < 0.8:
            c = rng.randint(0x300, 0x36F)  # combining marks
        elif r < 0.9:
            c = rng.randint(0x1F300, 0x1FAFF)
        else:
            c = rng.randint(0xE000, 0x10FFFF)
        chars.append(chr(c))
    return "".join(chars)


HANDWRITTEN = [
    "", " ", "  ", "\n", "\n\n\n", "\t", " \t \n ", "Hello world", "Hello  world", "Hello   world ",
    " leading space", "trailing space ", "a\nb\r\nc\n\n d", "tabs\tand\t\ttabs", "line one\n  line two\n\n\n",
    "It's they're we'VE I'M you'll he'd IT'S 'S 's 'ſ 'x '", "don't stop", "a'b'c",
    "1 12 123 1234 12345 123456 1234567", "3.14159 and 2,718 and -42", "x1y22z333", "٣٤٥ ½ ² Ⅻ",
    "!!!???...,,,;;;", "((([[[{{{}}}]]])))", "a--b---c", "#$%^&*@", "...\n\n...",
    "中文字符测试", "日本語のテキスト", "한국어 텍스트", "Ελληνικά κείμενο", "Русский текст", "עברית", "العربية",
    "😀😃😄 🚀 👍🏽 👨‍👩‍👧", "e\u0301 a\u0300\u0301 n\u0303 Å Å", "\u1100\u1161\u11a8 가", "ﬁ ℌ ①",
    "mixed中文and English123数字", " \u00a0\u3000x\u2009y", "\u0085", "ſ", "Ǆǅǆ",
    "<|im_start|>user\nHi there<|im_end|>\n<|im_start|>assistant\n", "<|endoftext|>", "a<|endoftext|>b",
    "<s>hello</s>", " <s> hello", "hello world<tool>call</tool>", "<tool>", "x <tool> y",
]


def test_strings(seed=1, count=150):
    rng = random.Random(seed)
    strings = list(HANDWRITTEN)
    lines = training_text(seed=seed + 100, lines=count)
    strings += lines[: count // 2]
    strings += [random_unicode(rng, rng.randint(1, 40)) for _ in range(count)]
    strings += ["\n".join(lines[i: i + 5]) for i in range(0, 40, 5)]
    return strings


test_strings.__test__ = False  # a helper, not a test


# ---- tokenizer.json files made with `tokenizers` ---------------------------------

BYTE_SPECIALS = ["<|endoftext|>", "<|im_start|>", "<|im_end|>"]


def byte_level_tokenizer(kind):
    """GPT-2 (ByteLevel pre-tokenizer or Split + ByteLevel), Qwen2 or Llama 3 style."""
    model = models.BPE(ignore_merges=kind == "llama3")
    tok = Tokenizer(model)
    if kind == "gpt2":
        tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    elif kind == "gpt2_prefix":
        tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=True)
    else:
        regex = {"gpt2_split": GPT2_REGEX, "qwen2": QWEN2_REGEX, "llama3": LLAMA3_REGEX}[kind]
        tok.pre_tokenizer = pre_tokenizers.Sequence([
            pre_tokenizers.Split(Regex(regex), behavior="isolated", invert=False),
            pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False),
        ])
    if kind == "qwen2":
        tok.normalizer = normalizers.NFC()
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(vocab_size=700, initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
                                  special_tokens=BYTE_SPECIALS if kind != "llama3" else ["<|begin_of_text|>", "<|eot_id|>"],
                                  show_progress=False)
    tok.train_from_iterator(training_text(), trainer=trainer)
    if kind == "llama3":
        bos = tok.token_to_id("<|begin_of_text|>")
        tok.post_processor = processors.Sequence([
            processors.ByteLevel(trim_offsets=False),
            processors.TemplateProcessing(single="<|begin_of_text|> $A", pair="<|begin_of_text|> $A <|begin_of_text|> $B",
                                          special_tokens=[("<|begin_of_text|>", bos)]),
        ])
    else:
        tok.post_processor = processors.ByteLevel(trim_offsets=False)
    tok.add_tokens([AddedToken("<tool>", normalized=False), AddedToken("</tool>", normalized=False)])
    return tok


def sentencepiece_tokenizer(kind, byte_fallback=True):
    """Llama 2 / Mistral style: "▁" for spaces, byte fallback, <s> added by the post-processor."""
    specials = ["<unk>", "<s>", "</s>"]
    byte_tokens = [f"<0x{b:02X}>" for b in range(256)] if byte_fallback else []

    def configure(tok):
        if kind == "legacy":
            tok.normalizer = normalizers.Sequence([normalizers.Prepend("▁"), normalizers.Replace(" ", "▁")])
            tok.decoder = decoders.Sequence([decoders.Replace("▁", " "), decoders.ByteFallback(), decoders.Fuse(),
                                             decoders.Strip(" ", 1, 0)])
        else:
            scheme, split = {"metaspace_first": ("first", False), "metaspace_always": ("always", True)}[kind]
            tok.pre_tokenizer = pre_tokenizers.Metaspace(replacement="▁", prepend_scheme=scheme, split=split)
            tok.decoder = decoders.Metaspace(replacement="▁", prepend_scheme=scheme, split=split)

    trained = Tokenizer(models.BPE(unk_token="<unk>"))
    configure(trained)
    trainer = trainers.BpeTrainer(vocab_size=500, special_tokens=specials, limit_alphabet=60, show_progress=False)
    trained.train_from_iterator(training_text(), trainer=trainer)
    # sentencepiece files keep <unk>, <s>, </s> and the byte tokens in the model's vocabulary.
    vocab_json = json.loads(trained.to_str())["model"]
    order = specials + byte_tokens + [t for t, _ in sorted(vocab_json["vocab"].items(), key=lambda kv: kv[1])
                                      if t not in specials]
    vocab = {token: i for i, token in enumerate(order)}
    merges = [tuple(m) if isinstance(m, list) else tuple(m.split(" ")) for m in vocab_json["merges"]]
    tok = Tokenizer(models.BPE(vocab=vocab, merges=merges, unk_token="<unk>", fuse_unk=True, byte_fallback=byte_fallback))
    configure(tok)
    tok.add_special_tokens([AddedToken(t, normalized=False) for t in specials])
    tok.post_processor = processors.TemplateProcessing(single="<s> $A", pair="<s> $A <s> $B",
                                                       special_tokens=[("<s>", vocab["<s>"])])
    tok.add_tokens([AddedToken("<tool>", normalized=False), AddedToken("hello world", normalized=True)])
    return tok


CONFIGS = {
    "gpt2": lambda: byte_level_tokenizer("gpt2"),
    "gpt2_prefix": lambda: byte_level_tokenizer("gpt2_prefix"),
    "gpt2_split": lambda: byte_level_tokenizer("gpt2_split"),
    "qwen2": lambda: byte_level_tokenizer("qwen2"),
    "llama3": lambda: byte_level_tokenizer("llama3"),
    "llama2_legacy": lambda: sentencepiece_tokenizer("legacy"),
    "llama2_legacy_no_fallback": lambda: sentencepiece_tokenizer("legacy", byte_fallback=False),
    "metaspace_first": lambda: sentencepiece_tokenizer("metaspace_first"),
    "metaspace_always_split": lambda: sentencepiece_tokenizer("metaspace_always"),
}


@pytest.fixture(scope="module", params=sorted(CONFIGS))
def pair(request, onyx, tmp_path_factory):
    """(tokenizers' Tokenizer, onyx's) over the same tokenizer.json."""
    tok = CONFIGS[request.param]()
    folder = tmp_path_factory.mktemp(request.param)
    tok.save(str(folder / "tokenizer.json"))
    return Tokenizer.from_file(str(folder / "tokenizer.json")), OnyxTokenizer(onyx, folder)


def test_encode_matches_tokenizers(pair):
    reference, ours = pair
    mismatches = []
    for text in test_strings():
        expected = reference.encode(text).ids
        got = ours.encode(text)
        if got != expected:
            mismatches.append((text, expected, got))
    assert not mismatches, f"{len(mismatches)} strings differ; first: {mismatches[0]!r}"


def test_decode_matches_tokenizers(pair):
    reference, ours = pair
    rng = random.Random(7)
    size = reference.get_vocab_size()
    cases = [reference.encode(text).ids for text in test_strings()]
    cases += [[rng.randrange(size) for _ in range(rng.randint(1, 12))] for _ in range(200)]
    for ids in cases:
        # The C API returns NUL-terminated strings: text stops at a decoded NUL.
        assert ours.decode(ids) == reference.decode(ids).split("\x00")[0], ids


def test_stream_concatenates_to_decode(pair):
    reference, ours = pair
    for text in test_strings():
        ids = reference.encode(text).ids
        expected = reference.decode(ids)
        if expected.endswith("\ufffd"):
            continue  # an unfinished character stays held back
        pieces = ours.stream(ids)
        assert "".join(pieces) == expected, (text, pieces)
        assert all("\ufffd" not in p for p in pieces) or "\ufffd" in text


def test_stream_long_generation(pair):
    reference, ours = pair
    text = "\n".join(training_text(seed=5, lines=40)) + " 中文😀 end"
    ids = reference.encode(text).ids
    assert "".join(ours.stream(ids)) == reference.decode(ids)


def test_token_ids_and_special_ids(pair):
    reference, ours = pair
    for token, id_ in list(reference.get_vocab().items())[:300]:
        assert ours.token_to_id(token) == id_
    assert ours.token_to_id("surely-not-a-token-\u2603") == -1
    bos, eos, pad = ours.special_ids()
    processor = json.loads(reference.to_str())["post_processor"]
    if processor and "TemplateProcessing" in json.dumps(processor):
        assert bos == reference.encode("x").ids[0]
    assert pad == -1


def test_every_code_point_class(onyx, tmp_path):
    """Unicode's planes 0-3 and 14 code point by code point (and a sample of the
    unassigned and private planes), each between letters, digits and spaces,
    through the Llama 3 regex: onyx's \\p{L}, \\p{N} and \\s tables against
    the `tokenizers` regex engine."""
    tok = byte_level_tokenizer("llama3")
    tok.save(str(tmp_path / "tokenizer.json"))
    ours = OnyxTokenizer(onyx, tmp_path)
    rng = random.Random(3)
    cps = [c for c in range(0x20, 0x40000) if not 0xD800 <= c < 0xE000]
    cps += list(range(0xE0000, 0xE1000)) + [rng.randrange(0x40000, 0x110000) for _ in range(5000)]
    step = 4000
    for i in range(0, len(cps), step):
        text = "".join(f"a{chr(c)}1 {chr(c)}" for c in cps[i:i + step])
        assert ours.encode(text) == tok.encode(text).ids, f"code points from U+{cps[i]:04X} differ"


def test_unsupported_component_is_named(onyx, tmp_path):
    tok = byte_level_tokenizer("gpt2")
    data = json.loads(tok.to_str())
    cases = {
        "Lowercase": ("normalizer", {"type": "Lowercase"}),
        "Whitespace": ("pre_tokenizer", {"type": "Whitespace"}),
        "WordPiece": ("decoder", {"type": "WordPiece", "prefix": "##", "cleanup": True}),
        "BertProcessing": ("post_processor", {"type": "BertProcessing", "sep": ["[SEP]", 1], "cls": ["[CLS]", 0]}),
        r"\d+": ("pre_tokenizer", {"type": "Split", "pattern": {"Regex": r"\d+"}, "behavior": "Isolated", "invert": False}),
    }
    for name, (key, value) in cases.items():
        folder = tmp_path / key / str(abs(hash(name)))
        folder.mkdir(parents=True)
        (folder / "tokenizer.json").write_text(json.dumps({**data, key: value}))
        with pytest.raises(RuntimeError, match=r"tokenizer\.json.*" + key) as info:
            OnyxTokenizer(onyx, folder)
        assert name in str(info.value)
    with pytest.raises(RuntimeError, match="tokenizer.json"):
        OnyxTokenizer(onyx, tmp_path / "missing")
    bad = tmp_path / "bad"
    bad.mkdir()
    (bad / "tokenizer.json").write_text("{\"model\": ")
    with pytest.raises(RuntimeError, match="tokenizer.json"):
        OnyxTokenizer(onyx, bad)


def test_decode_unknown_id_is_an_error(onyx, tmp_path):
    tok = byte_level_tokenizer("qwen2")
    tok.save(str(tmp_path / "tokenizer.json"))
    ours = OnyxTokenizer(onyx, tmp_path)
    with pytest.raises(RuntimeError, match="id 99999"):
        ours.decode([1, 99999])


def test_transformers_files(onyx, tmp_path):
    """tokenizer.json and tokenizer_config.json as transformers writes them for GPT-2 files."""
    transformers = pytest.importorskip("transformers", reason="transformers is not installed")
    tok = byte_level_tokenizer("gpt2")
    vocab_dir = tmp_path / "vocab"
    vocab_dir.mkdir()
    tok.model.save(str(vocab_dir))
    hf = transformers.GPT2TokenizerFast(vocab_file=str(vocab_dir / "vocab.json"), merges_file=str(vocab_dir / "merges.txt"),
                                        bos_token="<|endoftext|>", eos_token="<|endoftext|>")
    out = tmp_path / "saved"
    hf.save_pretrained(str(out))
    ours = OnyxTokenizer(onyx, out)
    for text in test_strings(count=40):
        assert ours.encode(text) == hf.encode(text), text
    bos, eos, _ = ours.special_ids()
    assert eos == hf.eos_token_id and bos == hf.bos_token_id
