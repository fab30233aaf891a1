"""Entry point of ``.venv/bin/reag``.

Every command module exposes ``register(app)``; this file only assembles
them, so a module's commands can be tested alone with ``typer.testing``.
Modules import their heavy dependencies (llama.cpp, torch, Kafka clients)
inside the commands, to keep ``reag --help`` fast.
"""

from __future__ import annotations

import importlib

import typer

app = typer.Typer(
    name="reag",
    help="Acceptance testing for LLM-based software, run on live traffic.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)

# Order is the order of `reag --help`.
_COMMAND_MODULES = (
    "shell.cli.stack",  # demo, up, down, status
    "shell.cli.corpus",  # corpus add/list
    "shell.cli.elicit",  # elicit
    "shell.cli.traffic",  # traffic send
    "shell.cli.judge",  # judge (one case by hand)
    "shell.cli.calibrate",  # calibrate, sweep
    "shell.cli.results",  # results, gate
    "shell.cli.report",  # report --html
    "shell.cli.review",  # review
    "shell.cli.spec",  # spec draft/eval
    "shell.cli.llm",  # llm probe/score/serve
    "shell.cli.dlq",  # dlq list/show/replay
)

for _name in _COMMAND_MODULES:
    try:
        _module = importlib.import_module(_name)
    except ModuleNotFoundError as exc:
        if exc.name != _name:
            raise
        continue
    _module.register(app)


if __name__ == "__main__":
    app()
