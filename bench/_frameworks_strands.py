"""The Strands Agents rows of ``bench/frameworks.py``: model-input tokens and stored messages
after a long tool-calling chat, with and without the reducer, beside Strands' own
conversation managers, and whether each breaks tool pairs.

Strands runs in a virtualenv of its own (``bench/_peers.py``: this checkout and
``strands-agents`` at the version the development environment has), where one worker process
runs every contender on the same scripted chat: per turn a question, two parallel tool calls,
their results, an answer. The model is a scripted subclass of Strands' ``Model``, so nothing
leaves the machine. Tokens are counted with this package's default estimate on the last
request's messages; "stored" is ``agent.messages`` after the last turn (what the agent keeps
and a session manager restores). Every request the model is sent is checked with
``MessageReducer.validate`` (orphan results, calls without results, roles not alternating).

Contenders:

* ``NullConversationManager``: nothing removed;
* ``ReducingConversationManager`` (``min_messages=20, max_messages=40``);
* ``SlidingWindowConversationManager(window_size=40)``, Strands' default manager, and the
  same with ``per_turn=True``;
* ``SummarizingConversationManager()`` (its defaults: summarise 30 % of the messages, keep
  the newest 10) with a scripted summarization agent. It acts only when the model reports a
  context-window overflow, so in its run (only there) the model overflows on a request of
  more than 60 messages.

``rows(turns)`` returns one dict per contender; ``python bench/_frameworks_strands.py``
prints them (``--worker strands`` runs them in this interpreter, which needs Strands).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from collections.abc import AsyncGenerator, Callable
from importlib.metadata import version
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent

Row = dict[str, Any]
"""``framework``, ``contender``, ``input_tokens``, ``input_messages``, ``stored_items``,
``invalid_requests`` (requests ``validate()`` finds a pairing or role problem in),
``problems`` (the kinds found), ``requests``."""

#: The model's window in the SummarizingConversationManager run (messages per request).
SUMMARIZING_WINDOW = 60


def rows(turns: int = 200) -> list[Row]:
    """Every Strands contender, run in Strands' own virtualenv."""
    sys.path.insert(0, str(HERE))
    from _peers import peer_python

    requirement = f"strands-agents=={_version('strands-agents')}".rstrip("=")
    python = peer_python("fw-strands", [str(ROOT), requirement])
    out = subprocess.run(
        [str(python), __file__, "--worker", "strands", "--turns", str(turns)],
        capture_output=True, text=True, check=True, timeout=3600,
        env={**os.environ, "OTEL_SDK_DISABLED": "true"},
    )  # fmt: skip
    return [json.loads(line) for line in out.stdout.splitlines() if line.startswith("{")]


def _version(package: str) -> str:
    try:
        return version(package)
    except Exception:  # not in this environment: the newest
        return ""


# -- the worker (runs inside Strands' virtualenv) -----------------------------------------


def _count(messages: list[Any]) -> int:
    from agentstate_reducer import MessageReducer

    counter = MessageReducer()
    return sum(counter.count_tokens(m) for m in messages)


def _broken(lists: list[list[Any]]) -> tuple[int, list[str]]:
    """How many of ``lists`` have a pairing or role problem, and the kinds found."""
    from agentstate_reducer import MessageReducer

    checker = MessageReducer(config=_config(format="bedrock", max_messages=None))
    bad = 0
    found: set[str] = set()
    for messages in lists:
        kinds = {p.kind for p in checker.validate(messages).problems} - {"over_budget"}
        bad += bool(kinds)
        found |= kinds
    return bad, sorted(found)


def _config(**fields: Any) -> Any:
    from agentstate_reducer import ReducerConfig

    return ReducerConfig(**fields)


def _strands(turns: int) -> list[Row]:
    from strands import Agent, tool
    from strands.agent.conversation_manager import (
        NullConversationManager,
        SlidingWindowConversationManager,
        SummarizingConversationManager,
    )
    from strands.models import Model
    from strands.types.exceptions import ContextWindowOverflowException

    from agentstate_reducer import MessageReducer
    from agentstate_reducer.strands import ReducingConversationManager

    class Scripted(Model):
        """Two parallel lookups per question, then the answer from their results."""

        def __init__(self, window: int | None = None, summary: bool = False) -> None:
            self.window = window
            self.summary = summary
            self.sent: list[list[Any]] = []

        def update_config(self, **model_config: Any) -> None:
            pass

        def get_config(self) -> Any:
            return {}

        def structured_output(self, *args: Any, **kwargs: Any) -> Any:
            raise NotImplementedError

        async def stream(  # type: ignore[override]
            self, messages: Any, tool_specs: Any = None, system_prompt: Any = None, **kw: Any
        ) -> AsyncGenerator[Any, None]:
            if self.window is not None and len(messages) > self.window:
                raise ContextWindowOverflowException(f"{len(messages)} messages")
            yield {"messageStart": {"role": "assistant"}}
            if self.summary:
                text = "Earlier the user asked about the weather in several cities."
                yield {"contentBlockDelta": {"delta": {"text": text}}}
                yield {"contentBlockStop": {}}
                yield {"messageStop": {"stopReason": "end_turn"}}
                return
            self.sent.append(list(messages))
            results = [b for b in messages[-1]["content"] if "toolResult" in b]
            if results:
                outs = [json.dumps(b["toolResult"]["content"]) for b in results]
                yield {
                    "contentBlockDelta": {"delta": {"text": "The results are " + ", ".join(outs)}}
                }
                yield {"contentBlockStop": {}}
                yield {"messageStop": {"stopReason": "end_turn"}}
                return
            n = len(self.sent)
            for k in (1, 2):
                call = {"toolUseId": f"c{n}-{k}", "name": "lookup"}
                yield {"contentBlockStart": {"start": {"toolUse": call}}}
                arguments = json.dumps({"city": f"city {n}", "day": k})
                yield {"contentBlockDelta": {"delta": {"toolUse": {"input": arguments}}}}
                yield {"contentBlockStop": {}}
            yield {"messageStop": {"stopReason": "tool_use"}}

    @tool
    def lookup(city: str, day: int) -> str:
        """Look the weather up."""
        return f"In {city} on day {day}: sunny, 21 degrees, light wind from the west. " * 3

    def summarizing() -> Any:
        summarizer = Agent(model=Scripted(summary=True), callback_handler=None)
        return SummarizingConversationManager(summarization_agent=summarizer)

    contenders: dict[str, tuple[Callable[[], Any], int | None]] = {
        "NullConversationManager (nothing removed)": (NullConversationManager, None),
        "agentstate-reducer ReducingConversationManager (20..40)": (
            lambda: ReducingConversationManager(
                MessageReducer(config=_config(min_messages=20, max_messages=40))
            ),
            None,
        ),
        "SlidingWindowConversationManager(window_size=40)": (
            lambda: SlidingWindowConversationManager(window_size=40),
            None,
        ),
        "SlidingWindowConversationManager(window_size=40, per_turn=True)": (
            lambda: SlidingWindowConversationManager(window_size=40, per_turn=True),
            None,
        ),
        f"SummarizingConversationManager() (model window {SUMMARIZING_WINDOW} messages)": (
            summarizing,
            SUMMARIZING_WINDOW,
        ),
    }
    out: list[Row] = []
    for label, (manager, window) in contenders.items():
        model = Scripted(window=window)
        agent = Agent(
            model=model,
            tools=[lookup],
            system_prompt="You look up the weather.",
            conversation_manager=manager(),
            callback_handler=None,
        )
        for turn in range(turns):
            agent(f"Weather question {turn}?")
        bad, kinds = _broken(model.sent)
        out.append(
            {
                "framework": "strands",
                "contender": label,
                "input_tokens": _count(model.sent[-1]),
                "input_messages": len(model.sent[-1]),
                "stored_items": len(agent.messages),
                "invalid_requests": bad,
                "problems": kinds,
                "requests": len(model.sent),
            }
        )
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--turns", type=int, default=200)
    parser.add_argument("--worker", choices=("strands",))
    args = parser.parse_args()
    if args.worker:
        import logging

        logging.disable(logging.WARNING)
        for row in _strands(args.turns):
            print(json.dumps(row))
        return
    for row in rows(args.turns):
        print(
            f"{row['framework']:8} {row['contender']:66} input {row['input_tokens']:>7} tokens"
            f" / {row['input_messages']:>4} messages, stored {row['stored_items']:>5},"
            f" invalid requests {row['invalid_requests']}/{row['requests']}"
            f" {' '.join(row['problems'])}"
        )


if __name__ == "__main__":
    main()
