from __future__ import annotations

import logging
import os
import subprocess
import sys
from pathlib import Path

import pytest
import tiktoken

from llm_observe.tokens.encodings import SPECS, EncodingStore
from tests.tokens.samples import SAMPLES


@pytest.mark.parametrize("name", ["o200k_base", "cl100k_base", "p50k_base"])
def test_local_encoding_is_tiktokens_own(name: str, bundled_dir: Path,
                                         reference: dict[str, tiktoken.Encoding]) -> None:
    ours = EncodingStore([bundled_dir]).get(name)
    theirs = reference[name]
    assert ours is not None
    # Same constructor parameters as tiktoken_ext.openai_public ...
    assert ours._pat_str == theirs._pat_str
    assert ours._special_tokens == theirs._special_tokens
    assert ours.n_vocab == theirs.n_vocab
    # ... so the same tokens for every sample.
    for text in SAMPLES:
        assert ours.encode_ordinary(text) == theirs.encode_ordinary(text), text


def test_store_caches_one_encoding_object(bundled_dir: Path) -> None:
    store = EncodingStore([bundled_dir])
    first = store.get("o200k_base")
    assert first is not None
    assert store.get("o200k_base") is first


def test_missing_files_give_none_and_one_warning(tmp_path: Path,
                                                 caplog: pytest.LogCaptureFixture) -> None:
    store = EncodingStore([tmp_path])
    with caplog.at_level(logging.WARNING, logger="llm_observe.tokens.encodings"):
        assert store.get("o200k_base") is None
        assert store.get("o200k_base") is None
    warnings = [r for r in caplog.records if "o200k_base" in r.getMessage()]
    assert len(warnings) == 1
    assert str(tmp_path) in warnings[0].getMessage()


def test_unknown_encoding_name_is_none(bundled_dir: Path) -> None:
    assert EncodingStore([bundled_dir]).get("no_such_encoding") is None


def test_file_with_wrong_hash_is_skipped_for_the_next_dir(
        tmp_path: Path, bundled_dir: Path, caplog: pytest.LogCaptureFixture) -> None:
    spec = SPECS["cl100k_base"]
    (tmp_path / spec.cache_key).write_bytes(b"dG9rZW4= 0\n")  # parses, but not the real file
    store = EncodingStore([tmp_path, bundled_dir])
    with caplog.at_level(logging.WARNING, logger="llm_observe.tokens.encodings"):
        assert store.find_file(spec) == bundled_dir / spec.cache_key
    assert any("SHA-256" in r.getMessage() for r in caplog.records)


def test_plainly_named_file_is_accepted(tmp_path: Path, bundled_dir: Path) -> None:
    spec = SPECS["p50k_base"]
    (tmp_path / "p50k_base.tiktoken").write_bytes((bundled_dir / spec.cache_key).read_bytes())
    encoding = EncodingStore([tmp_path]).get("p50k_base")
    assert encoding is not None
    assert len(encoding.encode_ordinary("tiktoken is great!")) == 6


def test_cache_key_is_tiktokens_file_name(bundled_dir: Path) -> None:
    # litellm ships files named exactly as tiktoken's cache names them.
    for name in ("o200k_base", "cl100k_base", "p50k_base"):
        assert (bundled_dir / SPECS[name].cache_key).is_file()


_OFFLINE_PROBE = """
import os, socket, sys
def refuse(*args, **kwargs):
    raise OSError("network disabled by the test")
socket.socket.connect = refuse
socket.create_connection = refuse
before = dict(os.environ)
from llm_observe.tokens import count_tokens
result = count_tokens("tiktoken is great!", "openai/gpt-4o")
print(result.method, result.tokens, result.encoding)
print("litellm imported:", "litellm" in sys.modules)
print("environ changed:", dict(os.environ) != before)
"""


def test_counts_exactly_with_no_network_no_litellm_import_no_env_change(
        reference: dict[str, tiktoken.Encoding]) -> None:
    env = {k: v for k, v in os.environ.items()
           if k not in ("TIKTOKEN_CACHE_DIR", "DATA_GYM_CACHE_DIR")}
    root = Path(__file__).resolve().parents[2]
    env["PYTHONPATH"] = str(root) + os.pathsep + env.get("PYTHONPATH", "")
    out = subprocess.run([sys.executable, "-c", _OFFLINE_PROBE], env=env, capture_output=True,
                         text=True, timeout=60, check=True).stdout.splitlines()
    expected = len(reference["o200k_base"].encode_ordinary("tiktoken is great!"))
    assert out == [f"exact {expected} o200k_base", "litellm imported: False",
                   "environ changed: False"]
