"""The main job: one tool-calling LangGraph agent, stored bare and bounded, side by side.

``agentstate-reducer demo`` (or ``make demo``) runs the same scripted conversation three
times on a real checkpoint saver: bare, through
:class:`~agentstate_reducer.langgraph.ReducingCheckpointSaver`, and through it with
``keep_checkpoints``, and reports what each stored, measured in the database itself;
``--recall`` adds long-term memory (``StoreMemory`` and ``Recall``) to the bounded runs. It
needs the ``[demo]`` extra (``pip install "agentstate-reducer[demo]"``); without it the
command says so on one line.

Modules, one concept each:

* :mod:`~agentstate_reducer.demo.cli`: the options, the three runs, the exit statuses;
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
    RECALL_ASK_TURN,
    RECALL_FACT,
    RECALL_FACT_TURN,
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
    DEFAULT_KEEP_CHECKPOINTS,
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
    RecallOutcome,
    RunResult,
    TurnSample,
    format_report,
    plot,
    recall_line,
    retention_line,
    sample_turns,
    summary_line,
    write_csv,
)

__all__ = [
    "CONNECT_TIMEOUT",
    "COSMOS_ENV",
    "DEFAULT_KEEP_CHECKPOINTS",
    "DEFAULT_MAX_MESSAGES",
    "DEFAULT_OUTPUT",
    "DEFAULT_TURNS",
    "DEMO_INSTALL",
    "LOCK_TIMEOUT",
    "MIN_MAX_MESSAGES",
    "MIN_MAX_TOKENS",
    "RECALL_ASK_TURN",
    "RECALL_FACT",
    "RECALL_FACT_TURN",
    "STATEMENT_TIMEOUT",
    "SYSTEM_PROMPT",
    "Backend",
    "DemoError",
    "RecallOutcome",
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
    "recall_line",
    "redact",
    "retention_line",
    "run",
    "run_conversation",
    "run_from_args",
    "sample_turns",
    "scripted_policy",
    "summary_line",
    "write_csv",
]
