"""The one C extension: the word model's scorer (llm_observe/scan/native/_wordmodel.c).

Everything else is in pyproject.toml. The extension is optional: without a C compiler or
the Python headers the build says so and goes on, and the package runs the same scores in
pure Python (llm_observe/scan/native/__init__.py chooses at import). The source's SHA-256
is compiled in, so an in-place build older than an edited source is recognised and not
used.
"""

from __future__ import annotations

import hashlib
import sys
from pathlib import Path

from setuptools import Extension, setup

SOURCE = "llm_observe/scan/native/_wordmodel.c"
digest = hashlib.sha256((Path(__file__).parent / SOURCE).read_bytes()).hexdigest()
# The scores must be CPython's float operations bit for bit: no fused multiply-add.
flags = [] if sys.platform == "win32" else ["-ffp-contract=off", "-fno-fast-math"]

setup(ext_modules=[Extension(
    "llm_observe.scan.native._wordmodel", [SOURCE],
    define_macros=[("WORDMODEL_SOURCE_SHA256", f'"{digest}"')],
    extra_compile_args=flags, optional=True)])
