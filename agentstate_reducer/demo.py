"""The main job: one tool-calling LangGraph agent, stored bare and bounded, side by side.

``agentstate-reducer demo`` runs the same scripted conversation twice on a real checkpoint
saver: once with the saver as it is, once wrapped in
:class:`~agentstate_reducer.langgraph.saver.ReducingCheckpointSaver`. After every turn it
reads from the database how many bytes the thread occupies and how many messages its
newest checkpoint holds, then prints a table of sample turns, a closing line with the
ratios, a CSV of every turn and, when matplotlib is installed, a PNG plot.

The agent is a ``StateGraph`` over ``MessagesState`` (LangGraph's ``add_messages``): an
agent node calling :class:`~agentstate_reducer.langgraph.scripted.ScriptedChatModel` (no
network; it rejects any history a chat provider would reject, so a broken history stops
the run) and a ``ToolNode`` with two small tools, a calculator and a lookup table. Each
turn is one ``invoke``: human question, tool call, tool result, answer.

Storage backends (``--saver``): ``sqlite`` (default; files in a temporary directory,
deleted at exit), a ``postgresql://`` URL (``PostgresSaver``; tables created by its
``setup()``, the demo's two threads deleted at the end), or ``cosmosdb``
(``agentstate_cosmosdb.CosmosDBSaver``, endpoint and key from ``COSMOSDB_ENDPOINT`` and
``COSMOSDB_KEY``; the demo's two threads deleted at the end).
"""

from __future__ import annotations

import argparse
import ast
import contextlib
import csv
import json
import math
import operator
import os
import re
import sqlite3
import sys
import tempfile
import time
import uuid
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TextIO
from urllib.parse import urlsplit, urlunsplit

from ._progress import ProgressBar
from .config import ReducerConfig
from .reducer import MessageReducer

__all__ = [
    "DEFAULT_MAX_MESSAGES",
    "DEFAULT_TURNS",
    "DemoError",
    "RunResult",
    "TurnSample",
    "add_arguments",
    "build_agent",
    "calculate",
    "demo_model",
    "demo_tools",
    "look_up",
    "question",
    "run",
    "run_conversation",
    "run_from_args",
    "scripted_policy",
]

DEFAULT_TURNS = 200
DEFAULT_MAX_MESSAGES = 40
DEFAULT_OUTPUT = "demo-output"
MIN_MAX_MESSAGES = 4
"""The smallest ``--max-messages``: one turn of the demo adds four messages."""
MIN_MAX_TOKENS = 100
"""The smallest ``--max-tokens``: one turn of the demo counts about 60 tokens."""

SYSTEM_PROMPT = (
    "You are a concise assistant. Use the calculator tool for arithmetic and the lookup "
    "tool for facts; quote the tool's answer."
)

COSMOS_ENV = ("COSMOSDB_ENDPOINT", "COSMOSDB_KEY")


class DemoError(Exception):
    """A problem the user can fix (an unreachable database, an unwritable directory).

    The command prints its message on one line and exits with status 1.
    """


# -- the agent: two tools and a scripted model ------------------------------------------

_FACTS = {
    "oslo": "Oslo is the capital of Norway, on the Oslofjord; about 700,000 people live there.",
    "lagos": "Lagos is Nigeria's largest city, a port on the Gulf of Guinea, home to over "
    "15 million people.",
    "kyoto": "Kyoto was Japan's imperial capital for over a thousand years and keeps about "
    "1,600 Buddhist temples.",
    "lima": "Lima, the capital of Peru, lies on the Pacific coast and was founded in 1535.",
    "tallinn": "Tallinn is the capital of Estonia; its medieval old town is a UNESCO World "
    "Heritage Site.",
    "perth": "Perth is the capital of Western Australia and one of the most isolated large "
    "cities in the world.",
}

_BINARY: dict[type[ast.operator], Callable[[Any, Any], Any]] = {
    ast.Add: operator.add,
    ast.Sub: operator.sub,
    ast.Mult: operator.mul,
    ast.Div: operator.truediv,
    ast.Mod: operator.mod,
}


def calculate(expression: str) -> str:
    """Evaluate an arithmetic expression of numbers, ``+ - * / %`` and parentheses.

    Args:
        expression: The expression, e.g. ``"17 * 23 + 4"``.

    Returns:
        The value as text, or a line starting with ``error:`` when the expression is
        not plain arithmetic or divides by zero.
    """

    def value(node: ast.AST) -> float | int:
        if isinstance(node, ast.Constant) and isinstance(node.value, (int, float)):
            if isinstance(node.value, bool):
                raise ValueError("not a number: a boolean")
            return node.value
        if isinstance(node, ast.UnaryOp) and isinstance(node.op, (ast.USub, ast.UAdd)):
            inner = value(node.operand)
            return -inner if isinstance(node.op, ast.USub) else inner
        if isinstance(node, ast.BinOp) and type(node.op) in _BINARY:
            return _BINARY[type(node.op)](value(node.left), value(node.right))  # type: ignore[no-any-return]
        raise ValueError(f"not plain arithmetic: {ast.dump(node)[:60]}")

    try:
        result = value(ast.parse(expression, mode="eval").body)
    except (SyntaxError, ValueError, ZeroDivisionError) as exc:
        return f"error: {exc}"
    return str(result)


def look_up(topic: str) -> str:
    """Return the stored fact about ``topic``, or a line saying there is none."""
    return _FACTS.get(topic.strip().lower(), f"No entry for {topic!r}.")


def question(turn: int) -> str:
    """The human message of ``turn`` (1-based): arithmetic on odd turns, a fact on even ones."""
    if turn % 2:
        a, b, c = 11 + turn % 89, 3 + turn % 17, turn
        return f"Turn {turn}: what is {a} * {b} + {c}?"
    topics = sorted(_FACTS)
    return f"Turn {turn}: tell me about {topics[turn // 2 % len(topics)].title()}."


_ASK_MATH = re.compile(r"what is (.+)\?$")
_ASK_FACT = re.compile(r"tell me about (.+)\.$")


def scripted_policy(messages: list[Any]) -> Any:
    """The scripted model's policy: a tool call for a question, an answer for a tool result.

    Args:
        messages: The messages the model was called with.

    Returns:
        An ``AIMessage`` calling ``calculator`` or ``lookup`` when the last message is a
        human question, else a text answer quoting the last tool result.
    """
    from langchain_core.messages import HumanMessage, ToolMessage

    from .langgraph.scripted import tool_call

    last = messages[-1]
    if isinstance(last, HumanMessage):
        text = str(last.content)
        if match := _ASK_MATH.search(text):
            return tool_call("calculator", {"expression": match.group(1)})
        if match := _ASK_FACT.search(text):
            return tool_call("lookup", {"topic": match.group(1)})
        return "I can only do arithmetic and look up cities."
    if isinstance(last, ToolMessage):
        if last.name == "calculator":
            return f"The calculator says {last.content}."
        return f"Here is what I found: {last.content}"
    return "Ask me something."


def demo_tools() -> list[Any]:
    """The agent's two tools: ``calculator`` (:func:`calculate`), ``lookup`` (:func:`look_up`)."""
    from langchain_core.tools import StructuredTool

    return [
        StructuredTool.from_function(calculate, name="calculator"),
        StructuredTool.from_function(look_up, name="lookup"),
    ]


def demo_model(tools: Sequence[Any]) -> Any:
    """A :class:`ScriptedChatModel` following :func:`scripted_policy`, bound to ``tools``.

    The model is strict: called with a history a provider would reject, it raises
    ``ProviderRejectedError``.
    """
    from .langgraph.scripted import ScriptedChatModel

    return ScriptedChatModel(script=[scripted_policy], cycle=True).bind_tools(list(tools))


def build_agent(checkpointer: Any) -> Any:
    """Compile the demo agent: ``agent -> tools -> agent -> end`` over ``MessagesState``.

    Args:
        checkpointer: The LangGraph checkpoint saver the graph stores its state in.

    Returns:
        The compiled graph.
    """
    from langgraph.graph import START, MessagesState, StateGraph
    from langgraph.prebuilt import ToolNode, tools_condition

    tools = demo_tools()
    model = demo_model(tools)

    def agent(state: MessagesState) -> dict[str, Any]:
        return {"messages": [model.invoke(state["messages"])]}

    builder: StateGraph[Any] = StateGraph(MessagesState)
    builder.add_node("agent", agent)
    builder.add_node("tools", ToolNode(tools))
    builder.add_edge(START, "agent")
    builder.add_conditional_edges("agent", tools_condition)
    builder.add_edge("tools", "agent")
    return builder.compile(checkpointer=checkpointer)


# -- storage backends: a saver and an honest byte count ---------------------------------


@dataclass
class Backend:
    """A checkpoint saver and a way to ask its database how big a thread is.

    Attributes:
        saver: The LangGraph checkpoint saver (bare).
        measure: ``(thread_id) -> bytes`` read from the database itself.
        cleanup: Called with the thread ids when the run is over.
    """

    saver: Any
    measure: Callable[[str], int]
    cleanup: Callable[[Sequence[str]], None] = lambda _threads: None


@dataclass(frozen=True)
class SaverSpec:
    """What ``--saver`` asked for.

    Attributes:
        kind: ``"sqlite"``, ``"postgres"`` or ``"cosmosdb"``.
        url: The PostgreSQL URL (``kind == "postgres"`` only).
    """

    kind: str
    url: str = ""

    @property
    def title(self) -> str:
        """A short name for headers and file names."""
        return {"sqlite": "SQLite", "postgres": "PostgreSQL", "cosmosdb": "Cosmos DB"}[self.kind]

    @property
    def measured(self) -> str:
        """How ``stored`` is measured, for the table header."""
        return {
            "sqlite": "sum of the lengths of the thread's rows in the checkpoints and writes "
            "tables",
            "postgres": "sum of pg_column_size of the thread's rows in checkpoints, "
            "checkpoint_blobs and checkpoint_writes",
            "cosmosdb": "sum of the JSON sizes of the thread's documents",
        }[self.kind]


_SQLITE_THREAD_BYTES = """
SELECT
  (SELECT COALESCE(SUM(length(thread_id) + length(checkpoint_ns) + length(checkpoint_id)
        + COALESCE(length(parent_checkpoint_id), 0) + COALESCE(length(type), 0)
        + COALESCE(length(checkpoint), 0) + COALESCE(length(metadata), 0)), 0)
     FROM checkpoints WHERE thread_id = :t)
  + (SELECT COALESCE(SUM(length(thread_id) + length(checkpoint_ns) + length(checkpoint_id)
        + length(task_id) + length(task_path) + 8 + length(channel)
        + COALESCE(length(type), 0) + COALESCE(length(value), 0)), 0)
     FROM writes WHERE thread_id = :t)
"""

_POSTGRES_THREAD_BYTES = """
SELECT
  (SELECT COALESCE(SUM(pg_column_size(t.*)), 0) FROM checkpoints t WHERE thread_id = %(t)s)
  + (SELECT COALESCE(SUM(pg_column_size(t.*)), 0) FROM checkpoint_blobs t WHERE thread_id = %(t)s)
  + (SELECT COALESCE(SUM(pg_column_size(t.*)), 0) FROM checkpoint_writes t
     WHERE thread_id = %(t)s)
"""


def redact(url: str) -> str:
    """``url`` with any password replaced by ``***``."""
    try:
        parts = urlsplit(url)
    except ValueError:
        return "<unparsable URL>"
    if parts.password is None:
        return url
    netloc = parts.netloc.rsplit("@", 1)
    user = (parts.username or "") + ":***"
    return urlunsplit(parts._replace(netloc=f"{user}@{netloc[-1]}"))


@contextlib.contextmanager
def open_backend(spec: SaverSpec, name: str, workdir: Path) -> Iterator[Backend]:
    """Open the saver ``spec`` names, ready to use, and close it on exit.

    Args:
        spec: The parsed ``--saver``.
        name: A label for this run's storage (``"bare"``, ``"bounded"``); SQLite uses it
            as the file name.
        workdir: Where SQLite files go.

    Yields:
        The backend.

    Raises:
        DemoError: The database cannot be reached or set up, or a driver is missing.
    """
    if spec.kind == "sqlite":
        with _sqlite_backend(workdir / f"{name}.sqlite") as backend:
            yield backend
    elif spec.kind == "postgres":
        with _postgres_backend(spec.url) as backend:
            yield backend
    else:
        with _cosmos_backend() as backend:
            yield backend


@contextlib.contextmanager
def _sqlite_backend(path: Path) -> Iterator[Backend]:
    from langgraph.checkpoint.sqlite import SqliteSaver

    try:
        conn = sqlite3.connect(str(path), check_same_thread=False)
        # WAL with synchronous=NORMAL, the usual setting for an application database: without
        # it every put waits for an fsync, and the timings measure the disk, not the saver.
        conn.execute("PRAGMA journal_mode=WAL")
        conn.execute("PRAGMA synchronous=NORMAL")
        saver = SqliteSaver(conn)
        saver.setup()
    except sqlite3.Error as exc:
        raise DemoError(f"cannot create the SQLite database {str(path)!r}: {exc}") from exc

    def measure(thread_id: str) -> int:
        row = conn.execute(_SQLITE_THREAD_BYTES, {"t": thread_id}).fetchone()
        return int(row[0])

    try:
        yield Backend(saver, measure)
    finally:
        conn.close()


@contextlib.contextmanager
def _postgres_backend(url: str) -> Iterator[Backend]:
    try:
        import psycopg
        from langgraph.checkpoint.postgres import PostgresSaver
        from psycopg.rows import dict_row
    except ImportError as exc:
        raise DemoError(
            "--saver postgresql://... needs langgraph-checkpoint-postgres and psycopg: "
            'pip install langgraph-checkpoint-postgres "psycopg[binary]"'
        ) from exc
    where = redact(url)
    try:
        conn = psycopg.connect(url, autocommit=True, prepare_threshold=0, row_factory=dict_row)
    except psycopg.Error as exc:
        reason = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise DemoError(
            f"cannot connect to PostgreSQL at {where}: {reason}; check that the server is "
            "running and that the URL's host, port, user, password and database are right"
        ) from exc
    try:
        saver = PostgresSaver(conn)
        try:
            saver.setup()
        except psycopg.Error as exc:
            raise DemoError(
                f"cannot create LangGraph's checkpoint tables in {where}: {exc}; check that "
                "the user may create tables in the database"
            ) from exc

        def measure(thread_id: str) -> int:
            row = conn.execute(_POSTGRES_THREAD_BYTES, {"t": thread_id}).fetchone()
            return int(next(iter(row.values()))) if row else 0

        def cleanup(threads: Sequence[str]) -> None:
            for thread in threads:
                saver.delete_thread(thread)

        yield Backend(saver, measure, cleanup)
    finally:
        conn.close()


@contextlib.contextmanager
def _cosmos_backend() -> Iterator[Backend]:
    missing = [name for name in COSMOS_ENV if not os.environ.get(name)]
    if missing:
        raise DemoError(
            f"--saver cosmosdb reads the account from the environment: set {' and '.join(missing)}"
            " (COSMOSDB_CA_FILE optionally names a CA bundle, e.g. for a local emulator)"
        )
    try:
        from agentstate_cosmosdb import CosmosDBSaver
        from agentstate_cosmosdb.errors import CosmosSaverError
    except ImportError as exc:
        raise DemoError(
            "--saver cosmosdb needs the Cosmos DB saver: pip install agentstate-cosmosdb"
        ) from exc
    endpoint = os.environ["COSMOSDB_ENDPOINT"]
    database = os.environ.get("COSMOSDB_DATABASE", "agentstate-demo")
    container_name = os.environ.get("COSMOSDB_CONTAINER", "demo-checkpoints")
    verify: bool | str = os.environ.get("COSMOSDB_CA_FILE") or True
    try:
        saver = CosmosDBSaver(
            database,
            container_name,
            connection_verify=verify,
            retry_total=1,
            connection_timeout=5,
        )
        saver.setup()
    except CosmosSaverError as exc:
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise DemoError(
            f"cannot use Cosmos DB at {endpoint} (database {database!r}, container "
            f"{container_name!r}): {first}; check COSMOSDB_ENDPOINT, COSMOSDB_KEY and "
            "COSMOSDB_CA_FILE"
        ) from exc

    def measure(thread_id: str) -> int:
        docs = saver.thread_documents(thread_id)
        return sum(len(json.dumps(doc, separators=(",", ":")).encode()) for doc in docs)

    def cleanup(threads: Sequence[str]) -> None:
        for thread in threads:
            saver.delete_thread(thread)

    try:
        yield Backend(saver, measure, cleanup)
    finally:
        saver.close()


# -- running the conversation ------------------------------------------------------------


@dataclass(frozen=True)
class TurnSample:
    """What the database held after one turn.

    Attributes:
        turn: The turn number, from 1.
        messages: Messages in the thread's newest checkpoint.
        stored_bytes: The thread's size in the database (see ``SaverSpec.measured``).
        seconds: Wall time of the turn's ``invoke`` (not of the measurement).
    """

    turn: int
    messages: int
    stored_bytes: int
    seconds: float


@dataclass
class RunResult:
    """One run of the conversation.

    Attributes:
        label: ``"bare"`` or ``"bounded"``.
        samples: One sample per turn, in order.
    """

    label: str
    samples: list[TurnSample] = field(default_factory=list)

    @property
    def last(self) -> TurnSample:
        """The sample of the last turn."""
        return self.samples[-1]

    def per_turn_bytes(self) -> list[int]:
        """Bytes the database grew by in each turn."""
        previous = 0
        grown = []
        for sample in self.samples:
            grown.append(sample.stored_bytes - previous)
            previous = sample.stored_bytes
        return grown


def run_conversation(
    checkpointer: Any,
    measure: Callable[[str], int],
    thread_id: str,
    turns: int,
    label: str,
    *,
    progress: TextIO | None = None,
) -> RunResult:
    """Drive the demo agent for ``turns`` turns on one thread, measuring after each.

    Args:
        checkpointer: The saver the graph stores its state in (bare or wrapped).
        measure: ``(thread_id) -> bytes`` read from the database.
        thread_id: The thread to use (it should be new).
        turns: How many turns to run.
        label: Names the run in the result and on the progress bar.
        progress: Where to draw the progress bar; stderr by default.

    Returns:
        One sample per turn.
    """
    from langchain_core.messages import HumanMessage, SystemMessage

    graph = build_agent(checkpointer)
    config: dict[str, Any] = {"configurable": {"thread_id": thread_id}}
    result = RunResult(label)
    bar = ProgressBar(turns, f"{label:>7}", stream=progress)
    try:
        for turn in range(1, turns + 1):
            update: list[Any] = [HumanMessage(question(turn))]
            if turn == 1:
                update.insert(0, SystemMessage(SYSTEM_PROMPT))
            start = time.perf_counter()
            graph.invoke({"messages": update}, config)
            elapsed = time.perf_counter() - start
            stored = graph.get_state(config).values.get("messages", [])
            result.samples.append(TurnSample(turn, len(stored), measure(thread_id), elapsed))
            bar.update()
    finally:
        bar.close()
    return result


def sample_turns(turns: int) -> list[int]:
    """The turns shown in the table: every 10% of the run, and the last."""
    if turns <= 10:
        return list(range(1, turns + 1))
    picked = {max(1, math.ceil(turns * k / 10)) for k in range(1, 11)}
    picked.add(turns)
    return sorted(picked)


# -- reporting ------------------------------------------------------------------------------


def _size(n: float) -> str:
    for unit in ("B", "KiB", "MiB", "GiB"):
        if abs(n) < 1024 or unit == "GiB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024
    return f"{n:.1f} GiB"  # pragma: no cover - the loop always returns


def _ratio(a: float, b: float) -> str:
    return f"{a / b:.1f}x" if b > 0 else "n/a"


def format_report(
    bare: RunResult, bounded: RunResult, spec: SaverSpec, bound: str, out: TextIO
) -> None:
    """Write the table of sample turns and the closing lines to ``out``.

    Args:
        bare: The run on the bare saver.
        bounded: The run through ReducingCheckpointSaver.
        spec: The storage backend, named in the header.
        bound: The reducer's bound, in words.
        out: Where to write.
    """
    turns = len(bare.samples)
    out.write(
        f"\n{turns} turns of a tool-calling LangGraph agent on {spec.title}: bare saver vs "
        f"ReducingCheckpointSaver ({bound})\n"
        f"messages = in the thread's newest checkpoint; stored = {spec.measured}, after the "
        "turn; ms/turn = graph.invoke wall time\n\n"
    )
    header = (
        f"{'turn':>6}  {'messages bare':>13} {'bounded':>8}  {'stored bare':>12} "
        f"{'bounded':>11}  {'ms/turn bare':>12} {'bounded':>8}"
    )
    out.write(header + "\n" + "-" * len(header) + "\n")
    for turn in sample_turns(turns):
        a, b = bare.samples[turn - 1], bounded.samples[turn - 1]
        out.write(
            f"{turn:>6}  {a.messages:>13} {b.messages:>8}  {_size(a.stored_bytes):>12} "
            f"{_size(b.stored_bytes):>11}  {a.seconds * 1000:>12.1f} {b.seconds * 1000:>8.1f}\n"
        )
    tail = max(1, turns // 10)
    bare_ms = sum(s.seconds for s in bare.samples[-tail:]) / tail * 1000
    bounded_ms = sum(s.seconds for s in bounded.samples[-tail:]) / tail * 1000
    peak = max(s.messages for s in bounded.samples)
    out.write(
        f"\nAfter {turns} turns: bare stores {_size(bare.last.stored_bytes)} for "
        f"{bare.last.messages} messages, bounded {_size(bounded.last.stored_bytes)} for "
        f"{bounded.last.messages} (at most {peak} after any turn): "
        f"{_ratio(bare.last.stored_bytes, bounded.last.stored_bytes)} less stored, "
        f"last turn wrote {_ratio(bare.per_turn_bytes()[-1], bounded.per_turn_bytes()[-1])} "
        f"fewer bytes, last {tail} turns {_ratio(bare_ms, bounded_ms)} faster "
        f"({bare_ms:.1f} vs {bounded_ms:.1f} ms/turn).\n"
    )


def write_csv(bare: RunResult, bounded: RunResult, path: Path) -> None:
    """Write every turn of both runs to ``path`` as CSV."""
    with path.open("w", newline="") as handle:
        writer = csv.writer(handle)
        writer.writerow(
            [
                "turn",
                "messages_bare",
                "messages_bounded",
                "stored_bytes_bare",
                "stored_bytes_bounded",
                "ms_bare",
                "ms_bounded",
            ]
        )
        for a, b in zip(bare.samples, bounded.samples, strict=True):
            writer.writerow(
                [
                    a.turn,
                    a.messages,
                    b.messages,
                    a.stored_bytes,
                    b.stored_bytes,
                    f"{a.seconds * 1000:.3f}",
                    f"{b.seconds * 1000:.3f}",
                ]
            )


def plot(bare: RunResult, bounded: RunResult, title: str, path: Path) -> bool:
    """Draw stored bytes per turn to ``path`` (PNG); False when matplotlib is missing.

    Left: bytes the database grew by in each turn (the bare run's line against the
    bounded run's sawtooth). Right: the thread's total size after each turn.
    """
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return False
    turns = [s.turn for s in bare.samples]
    fig, (left, right) = plt.subplots(1, 2, figsize=(11, 4.2))
    for result, style in ((bare, "tab:red"), (bounded, "tab:blue")):
        name = "bare saver" if result.label == "bare" else "ReducingCheckpointSaver"
        left.plot(turns, [b / 1024 for b in result.per_turn_bytes()], color=style, label=name)
        right.plot(
            turns, [s.stored_bytes / 1024**2 for s in result.samples], color=style, label=name
        )
    left.set(title="Bytes stored per turn", xlabel="turn", ylabel="KiB written in the turn")
    right.set(title="Thread size in the database", xlabel="turn", ylabel="MiB")
    for ax in (left, right):
        ax.grid(alpha=0.3)
        ax.legend()
    fig.suptitle(title)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return True


# -- the command ----------------------------------------------------------------------------


def _int_at_least(minimum: int, why: str = "") -> Callable[[str], int]:
    """An argparse ``type`` accepting whole numbers of at least ``minimum``."""

    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"expected a whole number, got {text!r}") from None
        if value < minimum:
            raise argparse.ArgumentTypeError(f"must be at least {minimum}{why}, got {value}")
        return value

    return parse


def _saver_spec(text: str) -> SaverSpec:
    lowered = text.strip().lower()
    if lowered == "sqlite":
        return SaverSpec("sqlite")
    if lowered in ("cosmosdb", "cosmos"):
        return SaverSpec("cosmosdb")
    if lowered.startswith(("postgresql://", "postgres://")):
        return SaverSpec("postgres", text.strip())
    raise argparse.ArgumentTypeError(
        f"expected 'sqlite', 'cosmosdb' or a postgresql://user@host:port/db URL, got {text!r}"
    )


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Add the demo's options to ``parser``."""
    parser.add_argument(
        "--turns",
        type=_int_at_least(1),
        default=DEFAULT_TURNS,
        help=f"conversation turns to run (default {DEFAULT_TURNS})",
    )
    parser.add_argument(
        "--saver",
        type=_saver_spec,
        default=SaverSpec("sqlite"),
        metavar="{sqlite,URL,cosmosdb}",
        help="where checkpoints go: 'sqlite' (default, files in a temporary directory), a "
        "postgresql:// URL, or 'cosmosdb' (COSMOSDB_ENDPOINT and COSMOSDB_KEY; optional "
        "COSMOSDB_CA_FILE, COSMOSDB_DATABASE, COSMOSDB_CONTAINER)",
    )
    bound = parser.add_mutually_exclusive_group()
    bound.add_argument(
        "--max-messages",
        type=_int_at_least(MIN_MAX_MESSAGES, " (one turn adds 4 messages)"),
        metavar="N",
        help=f"count bound: prune above N messages down to N/2 (default {DEFAULT_MAX_MESSAGES})",
    )
    bound.add_argument(
        "--max-tokens",
        type=_int_at_least(MIN_MAX_TOKENS, " (one turn counts about 60 tokens)"),
        metavar="N",
        help=f"token bound instead: prune above N tokens down to N/2 (at least {MIN_MAX_TOKENS})",
    )
    parser.add_argument(
        "--output",
        type=Path,
        default=Path(DEFAULT_OUTPUT),
        metavar="DIR",
        help=f"directory for demo.csv and demo.png (default ./{DEFAULT_OUTPUT}/)",
    )


def make_reducer(args: argparse.Namespace) -> tuple[MessageReducer, str]:
    """The reducer the options ask for, and its bound in words."""
    if args.max_tokens is not None:
        config = ReducerConfig(
            min_messages=0,
            max_messages=None,
            max_tokens=args.max_tokens,
            target_tokens=args.max_tokens // 2,
        )
        return MessageReducer(config=config), (
            f"prune above {args.max_tokens} tokens down to {args.max_tokens // 2}"
        )
    high = args.max_messages if args.max_messages is not None else DEFAULT_MAX_MESSAGES
    low = high // 2
    return MessageReducer(min_messages=low, max_messages=high), (
        f"prune above {high} messages down to {low}"
    )


def run(args: argparse.Namespace, out: TextIO | None = None) -> int:
    """Run the demo with parsed options; return the exit status.

    Args:
        args: Options from :func:`add_arguments`.
        out: Where the table goes; stdout by default. The progress bar goes to stderr.

    Returns:
        0 on success.

    Raises:
        DemoError: A problem the user can fix (database unreachable, output directory
            not writable).
    """
    out = out if out is not None else sys.stdout
    from .langgraph.saver import ReducingCheckpointSaver

    spec: SaverSpec = args.saver
    reducer, bound = make_reducer(args)
    output: Path = args.output
    try:
        output.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise DemoError(f"cannot create the output directory {str(output)!r}: {exc}") from exc

    run_id = uuid.uuid4().hex[:8]
    runs: dict[str, RunResult] = {}
    with tempfile.TemporaryDirectory(prefix="agentstate-demo-") as tmp:
        for label in ("bare", "bounded"):
            thread = f"agentstate-demo-{run_id}-{label}"
            with open_backend(spec, label, Path(tmp)) as backend:
                saver = backend.saver
                if label == "bounded":
                    saver = ReducingCheckpointSaver(saver, reducer)
                try:
                    runs[label] = run_conversation(
                        saver, backend.measure, thread, args.turns, label
                    )
                finally:
                    backend.cleanup([thread])

    bare, bounded = runs["bare"], runs["bounded"]
    format_report(bare, bounded, spec, bound, out)
    csv_path = output / "demo.csv"
    write_csv(bare, bounded, csv_path)
    png_path = output / "demo.png"
    title = f"{args.turns} turns on {spec.title}: bare vs ReducingCheckpointSaver ({bound})"
    if plot(bare, bounded, title, png_path):
        out.write(f"Wrote {csv_path} and the plot {png_path}\n")
    else:
        out.write(
            f"Wrote {csv_path}. For the plot, install matplotlib: "
            'pip install "agentstate-reducer[demo]"\n'
        )
    out.flush()
    return 0


def run_from_args(args: argparse.Namespace) -> int:
    """Run the demo; report a :class:`DemoError` on one line (exit 1) instead of raising."""
    try:
        return run(args)
    except DemoError as exc:
        sys.stderr.write(f"agentstate-reducer demo: error: {exc}\n")
        return 1
    except ModuleNotFoundError as exc:
        if not (exc.name or "").startswith(("langgraph", "langchain")):
            raise
        sys.stderr.write(
            f"agentstate-reducer demo: error: {exc.name} is not installed; the demo needs "
            'the [demo] extra: pip install "agentstate-reducer[demo]"\n'
        )
        return 1
    except KeyboardInterrupt:
        sys.stderr.write("agentstate-reducer demo: interrupted\n")
        return 130
