"""Command line: ``llm-observe start | status | stop | serve | render``.

Each subcommand lives in its own module exposing ``add_arguments(parser)`` and
``run(args) -> int``; this file only wires them, so importing the CLI stays
cheap and a subcommand's dependencies load only when it runs. A dependency that
belongs to an extra not installed is one line naming the extra, exit code 2.
"""

from __future__ import annotations

import argparse
import importlib
import re
import sys
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
# import name (or package prefix) -> (distribution, the pyproject.toml extra that installs
# it); a test keeps this equal to pyproject.toml's optional-dependencies.
EXTRA_MODULES: dict[str, tuple[str, str]] = {
    "aiohttp": ("aiohttp", "collector"),
    "prometheus_client": ("prometheus-client", "collector"),
    "grpc": ("grpcio", "collector"),
    "google.protobuf": ("protobuf", "collector"),
    "opentelemetry.proto": ("opentelemetry-proto", "collector"),
    "ahocorasick": ("pyahocorasick", "collector"),
    "jinja2": ("Jinja2", "collector"),
    "redis": ("redis", "collector"),
    "litellm": ("litellm", "tokens"),
    "onnxruntime": ("onnxruntime", "embeddings"),
    "tokenizers": ("tokenizers", "embeddings"),
    "onnx": ("onnx", "embeddings"),
    "safetensors": ("safetensors", "embeddings"),
    "numpy": ("numpy", "embeddings"),
}
EXIT_USAGE = 2
_RST_LITERAL = re.compile(r"``?([^`]+)``?")


def plain(text: str) -> str:
    """``text`` without reST literal markup: the docstrings' ``x`` shows as x in --help."""
    return _RST_LITERAL.sub(r"\1", text)


class _PlainFormatter(argparse.HelpFormatter):
    def _format_text(self, text: str) -> str:
        return super()._format_text(plain(text))

    def _expand_help(self, action: argparse.Action) -> str:
        return plain(super()._expand_help(action))


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="llm-observe", description=__doc__.splitlines()[0],
                                     formatter_class=_PlainFormatter)
    parser.add_argument("--version", action="version", version=f"llm-observe {__version__}")
    sub = parser.add_subparsers(dest="command", required=True)
    for name, (module_name, help_text) in SUBCOMMANDS.items():
        p = sub.add_parser(name, help=help_text, description=help_text,
                           formatter_class=_PlainFormatter)
        module = importlib.import_module(module_name)
        module.add_arguments(p, name)
        p.set_defaults(_module=module)
    return parser


def missing_extra(exc: ModuleNotFoundError) -> str | None:
    """The one-line advice for a module an uninstalled extra provides, else None."""
    name = exc.name or ""
    owners = [m for m in EXTRA_MODULES if name == m or name.startswith(m + ".")]
    if not owners:
        return None
    extra = EXTRA_MODULES[max(owners, key=len)][1]
    return (f"this needs the [{extra}] extra (missing module {exc.name}): "
            f"pip install 'llm-observe[{extra}]'")


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the console script; returns the process exit code."""
    args_list = list(sys.argv[1:] if argv is None else argv)
    command = next((a for a in args_list if a in SUBCOMMANDS), None)
    try:
        args = build_parser().parse_args(args_list)
        return int(args._module.run(args))
    except KeyboardInterrupt:
        return 130
    except ModuleNotFoundError as exc:
        advice = missing_extra(exc)
        if advice is None:
            raise
        prog = f"llm-observe {command}" if command else "llm-observe"
        print(f"{prog}: error: {advice}", file=sys.stderr, flush=True)
        return EXIT_USAGE
