"""The main job: one tool-calling LangGraph agent, stored bare and bounded, side by side.

``agentstate-reducer demo`` (or ``make demo``) runs the same scripted conversation twice on
a real checkpoint saver, once bare and once through
:class:`~agentstate_reducer.langgraph.ReducingCheckpointSaver`, and reports what each
stored, measured in the database itself. It needs the ``[demo]`` extra
(``pip install "agentstate-reducer[demo]"``); without it the command says so on one line.

Modules, one concept each:

* :mod:`~agentstate_reducer.demo.cli`: the options, the two runs, the exit statuses;
* :mod:`~agentstate_reducer.demo.agent`: the tools, the scripted model, the graph and the
  loop that drives it;
* :mod:`~agentstate_reducer.demo.backends`: SQLite, PostgreSQL and Cosmos DB savers and the
  byte count of a thread (the Cosmos DB package is imported only for ``--saver cosmosdb``);
* :mod:`~agentstate_reducer.demo.report`: samples, the table, the CSV and the plot.

The names the single-module demo of 0.6's development exported stay importable from here
(``from agentstate_reducer.demo import run, build_agent, question``). Importing this package
imports neither LangGraph nor LangChain.
"""

from __future__ import annotations

from .agent import (
    SYSTEM_PROMPT,
    build_agent,
    calculate,
    demo_model,
    demo_tools,
    look_up,
    question,
    run_conversation,
    scripted_policy,
)
from .backends import (
    CONNECT_TIMEOUT,
    COSMOS_ENV,
    LOCK_TIMEOUT,
    STATEMENT_TIMEOUT,
    Backend,
    SaverSpec,
    connect_kwargs,
    open_backend,
    parse_saver,
    redact,
)
from .cli import (
    DEFAULT_MAX_MESSAGES,
    DEFAULT_OUTPUT,
    DEFAULT_TURNS,
    MIN_MAX_MESSAGES,
    MIN_MAX_TOKENS,
    add_arguments,
    make_reducer,
    run,
    run_from_args,
)
from .errors import DEMO_INSTALL, DemoError
from .report import (
    RunResult,
    TurnSample,
    format_report,
    plot,
    sample_turns,
    summary_line,
    write_csv,
)

__all__ = [
    "CONNECT_TIMEOUT",
    "COSMOS_ENV",
    "DEFAULT_MAX_MESSAGES",
    "DEFAULT_OUTPUT",
    "DEFAULT_TURNS",
    "DEMO_INSTALL",
    "LOCK_TIMEOUT",
    "MIN_MAX_MESSAGES",
    "MIN_MAX_TOKENS",
    "STATEMENT_TIMEOUT",
    "SYSTEM_PROMPT",
    "Backend",
    "DemoError",
    "RunResult",
    "SaverSpec",
    "TurnSample",
    "add_arguments",
    "build_agent",
    "calculate",
    "connect_kwargs",
    "demo_model",
    "demo_tools",
    "format_report",
    "look_up",
    "make_reducer",
    "open_backend",
    "parse_saver",
    "plot",
    "question",
    "redact",
    "run",
    "run_conversation",
    "run_from_args",
    "sample_turns",
    "scripted_policy",
    "summary_line",
    "write_csv",
]
