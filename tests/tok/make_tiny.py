#!/usr/bin/env python3
"""Writes tests/tok/tokenizers/tiny/tokenizer.json: a small byte-level BPE
(the 256 byte chars plus the first merges of the DeepSeek file that close
over them) with an NFC normalizer, a Llama-3 Split regex, a Digits split,
added tokens using every flag (lstrip, rstrip, single_word, normalized,
non-special) and a BOS/EOS template.  It exercises what the real files do
not, and is the fuzzer's base file.  usage: make_tiny.py"""
import json, os

HERE = os.path.dirname(os.path.abspath(__file__))
src = json.load(open(os.path.join(HERE, "tokenizers/deepseek-v4/tokenizer.json"), encoding="utf-8"))


def b2u():
    bs = list(range(ord("!"), ord("~") + 1)) + list(range(ord("¡"), ord("¬") + 1)) + list(range(ord("®"), ord("ÿ") + 1))
    cs, n = bs[:], 0
    for b in range(256):
        if b not in bs:
            bs.append(b); cs.append(256 + n); n += 1
    return [chr(c) for _, c in sorted(zip(bs, cs))]


vocab = {c: i for i, c in enumerate(b2u())}
merges = []
for m in src["model"]["merges"]:
    a, b = m.split(" ") if isinstance(m, str) else m
    if a in vocab and b in vocab and a + b not in vocab:
        vocab[a + b] = len(vocab)
        merges.append([a, b])
    if len(merges) == 400:
        break
added = []
for content, flags in [("<s>", dict(special=True)), ("</s>", dict(special=True)),
                       ("<mask>", dict(special=True, lstrip=True)), ("<sep>", dict(special=True, rstrip=True)),
                       ("word", dict(single_word=True)), ("café", dict(normalized=True)),
                       ("the", dict(normalized=True)), ("<|x|>", dict(lstrip=True, rstrip=True))]:
    added.append(dict(id=len(vocab) + len(added), content=content, single_word=flags.get("single_word", False),
                      lstrip=flags.get("lstrip", False), rstrip=flags.get("rstrip", False),
                      normalized=flags.get("normalized", False), special=flags.get("special", False)))
doc = {
    "version": "1.0", "truncation": None, "padding": None, "added_tokens": added,
    "normalizer": {"type": "Sequence", "normalizers": [{"type": "NFC"}]},
    "pre_tokenizer": {"type": "Sequence", "pretokenizers": [
        {"type": "Digits", "individual_digits": False},
        {"type": "Split", "pattern": {"Regex": "(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}{1,3}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+"},
         "behavior": "Isolated", "invert": False},
        {"type": "ByteLevel", "add_prefix_space": False, "trim_offsets": True, "use_regex": False}]},
    "post_processor": {"type": "TemplateProcessing",
                       "single": [{"SpecialToken": {"id": "<s>", "type_id": 0}}, {"Sequence": {"id": "A", "type_id": 0}},
                                  {"SpecialToken": {"id": "</s>", "type_id": 0}}],
                       "pair": [{"Sequence": {"id": "A", "type_id": 0}}, {"Sequence": {"id": "B", "type_id": 1}}],
                       "special_tokens": {"<s>": {"id": "<s>", "ids": [added[0]["id"]], "tokens": ["<s>"]},
                                          "</s>": {"id": "</s>", "ids": [added[1]["id"]], "tokens": ["</s>"]}}},
    "decoder": {"type": "ByteLevel", "add_prefix_space": True, "trim_offsets": True, "use_regex": True},
    "model": {"type": "BPE", "dropout": None, "unk_token": None, "continuing_subword_prefix": None,
              "end_of_word_suffix": None, "fuse_unk": False, "byte_fallback": False, "ignore_merges": True,
              "vocab": vocab, "merges": merges}}
os.makedirs(os.path.join(HERE, "tokenizers/tiny"), exist_ok=True)
with open(os.path.join(HERE, "tokenizers/tiny/tokenizer.json"), "w", encoding="utf-8") as f:
    json.dump(doc, f, ensure_ascii=False, indent=1)
    f.write("\n")
