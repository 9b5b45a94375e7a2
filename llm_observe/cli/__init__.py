"""Command line: ``llm-observe start | status | stop | serve | render``.

Each subcommand lives in its own module exposing ``add_arguments(parser)`` and
``run(args) -> int``; this file only wires them, so importing the CLI stays
cheap and a subcommand's dependencies load only when it runs.
"""

from __future__ import annotations

import argparse
import importlib
from collections.abc import Sequence

from llm_observe import __version__

# subcommand -> (module, help)
SUBCOMMANDS: dict[str, tuple[str, str]] = {
    "start": ("llm_observe.cli.launcher", "start the all-in-one container stack"),
    "status": ("llm_observe.cli.launcher", "print whether the named stack is running"),
    "stop": ("llm_observe.cli.launcher", "stop the all-in-one container stack"),
    "serve": ("llm_observe.cli.serve", "run the collector natively (API, OTLP, /metrics)"),
    "render": ("llm_observe.provisioning.render", "render Prometheus/Tempo/Grafana provisioning"),
}


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="llm-observe", description=__doc__.splitlines()[0])
    parser.add_argument("--version", action="version", version=f"llm-observe {__version__}")
    sub = parser.add_subparsers(dest="command", required=True)
    for name, (module_name, help_text) in SUBCOMMANDS.items():
        p = sub.add_parser(name, help=help_text, description=help_text)
        module = importlib.import_module(module_name)
        module.add_arguments(p, name)
        p.set_defaults(_module=module)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the console script; returns the process exit code."""
    args = build_parser().parse_args(argv)
    try:
        return int(args._module.run(args))
    except KeyboardInterrupt:
        return 130


