"""The ``agentstate-reducer demo`` command: options, the three runs, and what it prints.

The same scripted conversation runs three times on a real checkpoint saver: with the saver
as it is ("bare"), wrapped in
:class:`~agentstate_reducer.langgraph.saver.ReducingCheckpointSaver` ("bounded": each
checkpoint holds a bounded list, but the thread still gains a checkpoint per step), and
wrapped with ``keep_checkpoints`` too ("retained": the thread keeps its newest
checkpoints, so its size stays flat). After every turn the demo reads from the database
how many bytes the thread occupies and how many messages its newest checkpoint holds,
then prints a table of sample turns, closing lines with the ratios, a CSV of every turn
and, when matplotlib is installed, a PNG plot.

``--recall`` adds long-term memory to the bounded runs: what leaves the list goes into a
LangGraph ``InMemoryStore`` (:class:`~agentstate_reducer.langgraph.StoreMemory`, with a
deterministic word-hash embedding: no network), and the model is shown the reducer's
view, into which :class:`~agentstate_reducer.policy.Recall` brings back what the question
needs; the user tells the agent a fact at turn 5 and asks for it at turn 150.

Before anything runs, the packages the demo imports are checked: on an install without the
``[demo]`` extra the command prints one line naming it and exits with status 1.
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import sys
import tempfile
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any, TextIO

from ..config import ReducerConfig
from ..reducer import MessageReducer
from .agent import RECALL_ASK_TURN, RECALL_FACT_TURN, run_conversation
from .backends import (
    CONNECT_TIMEOUT,
    LOCK_TIMEOUT,
    STATEMENT_TIMEOUT,
    SaverSpec,
    open_backend,
    parse_saver,
)
from .errors import DEMO_INSTALL, DemoError, require
from .report import RunResult, format_report, plot, write_csv

__all__ = [
    "DEFAULT_KEEP_CHECKPOINTS",
    "DEFAULT_MAX_MESSAGES",
    "DEFAULT_OUTPUT",
    "DEFAULT_TURNS",
    "DEMO_MODULES",
    "add_arguments",
    "make_reducer",
    "run",
    "run_from_args",
]

DEFAULT_TURNS = 200
DEFAULT_MAX_MESSAGES = 40
DEFAULT_KEEP_CHECKPOINTS = 20
"""Puts to a thread between two prunes to its newest checkpoint, in the third run."""
DEFAULT_OUTPUT = "demo-output"
MIN_MAX_MESSAGES = 4
"""The smallest ``--max-messages``: one turn of the demo adds four messages."""
MIN_MAX_TOKENS = 100
"""The smallest ``--max-tokens``: one turn of the demo counts about 60 tokens."""

DEMO_MODULES: tuple[tuple[str, str], ...] = (
    ("langchain_core.messages", "langchain-core"),
    ("langgraph.graph", "langgraph"),
    ("langgraph.checkpoint.base", "langgraph-checkpoint"),
    ("langgraph.prebuilt", "langgraph-prebuilt"),
    ("agentstate_reducer.langgraph", "agentstate-reducer[langgraph]"),
)
"""What every run imports, as ``(module, distribution)``; SQLite's saver is checked when
``--saver sqlite`` is used."""


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
    try:
        return parse_saver(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


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
        "PostgreSQL postgresql:// URL (postgresql+psycopg:// too) or 'host=... dbname=...' "
        "string (the password is never printed; connect_timeout, lock_timeout and "
        f"statement_timeout default to {CONNECT_TIMEOUT}, {LOCK_TIMEOUT} and "
        f"{STATEMENT_TIMEOUT} s), or 'cosmosdb' (COSMOSDB_ENDPOINT and "
        "COSMOSDB_KEY; optional COSMOSDB_CA_FILE, COSMOSDB_DATABASE, COSMOSDB_CONTAINER)",
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
        "--keep-checkpoints",
        type=_int_at_least(1),
        default=DEFAULT_KEEP_CHECKPOINTS,
        metavar="N",
        help="the third run also prunes the thread to its newest checkpoint every N puts "
        f"(keep_checkpoints; default {DEFAULT_KEEP_CHECKPOINTS})",
    )
    parser.add_argument(
        "--recall",
        action="store_true",
        help=f"tell the agent a fact at turn {RECALL_FACT_TURN} and ask for it at turn "
        f"{RECALL_ASK_TURN} (or the last): the bounded runs keep what they prune in a store "
        "(StoreMemory) and bring it back into the model's view (Recall)",
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
        DemoError: A problem the user can fix (a package of the ``[demo]`` extra missing,
            the database unreachable, the output directory not writable).
    """
    out = out if out is not None else sys.stdout
    spec: SaverSpec = args.saver
    require(DEMO_MODULES)
    if spec.kind == "sqlite":
        require((("langgraph.checkpoint.sqlite", "langgraph-checkpoint-sqlite"),))
    from ..langgraph import ReducingCheckpointSaver

    keep: int = args.keep_checkpoints
    recall_at = _recall_turn(args)
    output: Path = args.output
    csv_path, png_path = output / "demo.csv", output / "demo.png"
    _check_writable(output, (csv_path, png_path))

    run_id = uuid.uuid4().hex[:8]
    runs: dict[str, RunResult] = {}
    with tempfile.TemporaryDirectory(prefix="agentstate-demo-") as tmp:
        for label in ("bare", "bounded", "retained"):
            thread = f"agentstate-demo-{run_id}-{label}"
            reducer, bound = make_reducer(args)
            view = None
            if recall_at is not None and label != "bare":
                reducer, view = _with_memory(args, thread)
            with open_backend(spec, label, Path(tmp)) as backend:
                saver = backend.saver
                if label == "bounded":
                    saver = ReducingCheckpointSaver(saver, reducer)
                elif label == "retained":
                    saver = ReducingCheckpointSaver(saver, reducer, keep_checkpoints=keep)
                try:
                    runs[label] = run_conversation(
                        saver,
                        backend.measure,
                        thread,
                        args.turns,
                        label,
                        recall_at=recall_at,
                        view=view,
                    )
                except BaseException:
                    # Still try to delete the thread, but report what stopped the run: the
                    # clean-up usually meets the same cause (a lock, the server gone), and its
                    # error would replace the one that explains it.
                    with contextlib.suppress(Exception):
                        backend.cleanup([thread])
                    raise
                backend.cleanup([thread])

    bare, bounded, retained = runs["bare"], runs["bounded"], runs["retained"]
    _, bound = make_reducer(args)
    format_report(bare, bounded, spec, bound, out, retained=retained, keep=keep)
    title = (
        f"{args.turns} turns on {spec.title}: bare vs ReducingCheckpointSaver ({bound}), "
        f"and with keep_checkpoints={keep}"
    )
    # Checked before the runs, but the disk can still fill up or the directory go away.
    try:
        write_csv(bare, bounded, csv_path, retained)
    except OSError as exc:
        raise DemoError(f"cannot write {str(csv_path)!r}: {_reason(exc)}") from exc
    try:
        plotted = plot(bare, bounded, title, png_path, retained)
    except OSError as exc:
        raise DemoError(f"cannot write {str(png_path)!r}: {_reason(exc)}") from exc
    if plotted:
        out.write(f"Wrote {csv_path} and the plot {png_path}\n")
    else:
        out.write(f"Wrote {csv_path}. For the plot, install matplotlib: {DEMO_INSTALL}\n")
    out.flush()
    return 0


def _recall_turn(args: argparse.Namespace) -> int | None:
    """The turn that asks for the fact (``--recall``), or None.

    Raises:
        DemoError: The run is too short to tell the fact and ask for it later.
    """
    if not args.recall:
        return None
    if args.turns <= RECALL_FACT_TURN:
        raise DemoError(
            f"--recall tells the agent a fact at turn {RECALL_FACT_TURN} and asks for it "
            f"later: use --turns {RECALL_FACT_TURN + 1} or more"
        )
    turns: int = args.turns
    return min(RECALL_ASK_TURN, turns)


def _with_memory(args: argparse.Namespace, thread: str) -> tuple[MessageReducer, Any]:
    """A reducer of the options' bound that keeps what it prunes in a store, and the view
    (``(messages, config) -> messages``) the model is shown: the reducer's, where
    ``Recall`` brings memories back.

    The store is an ``InMemoryStore`` whose index embeds with a deterministic word-hash
    embedding (no model, no network); the memories go under the user's namespace.
    """
    from langgraph.store.memory import InMemoryStore

    from ..langgraph import Recall, StoreMemory
    from ..langgraph.testing import HashedWordEmbeddings
    from ..policy import DropOldest

    store = InMemoryStore(
        index={"dims": 256, "embed": HashedWordEmbeddings(256), "fields": ["text"]}
    )
    namespace = ("demo-memories", thread)
    base, _ = make_reducer(args)
    memory = StoreMemory(store, namespace=namespace, index=["text"])
    reducer = MessageReducer(config=dataclasses.replace(base.config, on_prune=[memory]))
    # The view bounds what the model sees the same way, after Recall added its block.
    viewer = MessageReducer(
        config=dataclasses.replace(
            base.config, policy=[Recall(store, namespace=namespace, k=2), DropOldest()]
        )
    )

    def view(messages: list[Any], config: dict[str, Any]) -> list[Any]:
        return viewer.view(messages).surviving or messages

    return reducer, view


def _reason(exc: OSError) -> str:
    """An OS error in words, without the path it repeats (the message names it already)."""
    return exc.strerror or " ".join(str(exc).split()) or type(exc).__name__


def _check_writable(output: Path, files: tuple[Path, ...]) -> None:
    """Fail before the runs, not after minutes of them, when the results cannot be written.

    Raises:
        DemoError: ``output`` cannot be created or written to, or one of ``files`` exists
            and is not a regular file (a directory, say).
    """
    try:
        output.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise DemoError(
            f"cannot create the output directory {str(output)!r}: {_reason(exc)}"
        ) from exc
    for path in files:
        if path.exists() and not path.is_file():
            raise DemoError(f"cannot write {str(path)!r}: it exists and is not a file")
    try:
        # A real write in the directory: permission bits alone do not tell (root, ACLs,
        # read-only mounts).
        with tempfile.NamedTemporaryFile(dir=output, prefix=".agentstate-demo-"):
            pass
    except OSError as exc:
        raise DemoError(
            f"cannot write to the output directory {str(output)!r}: {_reason(exc)}"
        ) from exc


def run_from_args(args: argparse.Namespace) -> int:
    """Run the demo; report a :class:`DemoError` on one line (exit 1) instead of raising."""
    try:
        return run(args)
    except DemoError as exc:
        sys.stderr.write(f"agentstate-reducer demo: error: {exc}\n")
        return 1
    except ModuleNotFoundError as exc:
        # A module missing below the ones checked up front (a broken install): still one
        # line, naming the extra that brings it.
        sys.stderr.write(
            f"agentstate-reducer demo: error: {exc.name} is not installed; the demo needs "
            f"the [demo] extra: {DEMO_INSTALL}\n"
        )
        return 1
    except KeyboardInterrupt:
        sys.stderr.write("agentstate-reducer demo: interrupted\n")
        return 130
