"""``python -m llm_observe.cli``: the console script."""

from __future__ import annotations

import sys

from llm_observe.cli import main

sys.exit(main())
