"""What a long tool-calling chat costs in each agent framework, with and without the reducer,
beside the framework's own trimming (issue 21): model-input tokens and stored items after
200 turns, and how many model requests break a tool pair.

Each framework runs in a virtualenv of its own (``bench/_peers.py``: this checkout and the
framework's package at the version the development environment has, else the newest), one
worker process per framework running every contender on the same scripted chat: per turn a
question, two parallel tool calls, their results, an answer. Models are scripted (the
framework's model interface), so nothing leaves the machine. Tokens are this package's
default estimate of the last request's items; "stored" is what the framework keeps for the
next turn. Every request a model is sent is checked with ``MessageReducer.validate`` (orphan
results, calls without results, roles); a request with such a problem counts as broken. For
the Agents SDK's ``SessionSettings(limit=...)`` the items a run reads are checked too
(``read:`` problems): the SDK drops the orphan outputs it finds there before the request.

Rows:

* OpenAI Agents SDK (here): a plain ``SQLiteSession``; ``ReducingSession`` around it
  (``min_messages=20, max_messages=40``); ``model_input_filter`` with the same reducer (the
  model's view only, the session unbounded); the SDK's own trimming,
  ``SessionSettings(limit=40)`` and ``limit=5`` (the newest items a run reads).
* pydantic-ai and Google ADK: ``bench/_frameworks_pydantic_adk.py`` (``rows(turns)``).
* Strands Agents: ``bench/_frameworks_strands.py`` (``rows(turns)``), when present.

Usage::

    python bench/frameworks.py            # 200 turns
    python bench/frameworks.py --quick    # 40 turns
    python bench/frameworks.py --only openai-agents

The last line is ``RESULT {json}``: per framework, the last request's input tokens without
the reducer over those with it.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import subprocess
import sys
from importlib.metadata import version
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(HERE))

Row = dict[str, Any]
"""As in ``bench/_frameworks_pydantic_adk.py``: ``framework``, ``contender``,
``input_tokens``, ``input_messages``, ``stored_items``, ``invalid_requests``, ``problems``,
``requests``."""

FRAMEWORKS = ("openai-agents", "pydantic-ai", "google-adk", "strands")


def openai_agents_rows(turns: int = 200) -> list[Row]:
    """The OpenAI Agents SDK contenders, run in the SDK's own virtualenv."""
    from _peers import peer_python

    try:
        pinned = f"openai-agents=={version('openai-agents')}"
    except Exception:  # not in this environment: the newest
        pinned = "openai-agents"
    python = peer_python("fw-openai-agents", [str(ROOT), pinned])
    out = subprocess.run(
        [str(python), __file__, "--worker", "openai-agents", "--turns", str(turns)],
        capture_output=True,
        text=True,
        check=True,
        timeout=3600,
    )
    return [json.loads(line) for line in out.stdout.splitlines() if line.startswith("{")]


def strands_rows(turns: int = 200) -> list[Row]:
    """Strands Agents' rows, from ``bench/_frameworks_strands.py`` when a teammate's module
    is there (it exposes ``rows(turns)`` like the others); none otherwise."""
    if importlib.util.find_spec("_frameworks_strands") is None:
        return []
    import _frameworks_strands

    rows: list[Row] = _frameworks_strands.rows(turns)
    return rows


def pydantic_adk_rows(turns: int = 200) -> list[Row]:
    """The pydantic-ai and Google ADK rows (``bench/_frameworks_pydantic_adk.py``)."""
    import _frameworks_pydantic_adk

    return _frameworks_pydantic_adk.rows(turns)


# -- the Agents SDK worker (runs inside the SDK's virtualenv) ------------------------------


def _openai_agents(turns: int) -> list[Row]:
    import asyncio
    import tempfile

    from _frameworks_pydantic_adk import _broken, _count
    from agents import Agent, RunConfig, Runner, SQLiteSession, function_tool, set_tracing_disabled
    from agents.items import ModelResponse
    from agents.memory import SessionSettings
    from agents.models.interface import Model
    from agents.usage import Usage
    from openai.types.responses import (
        ResponseFunctionToolCall,
        ResponseOutputMessage,
        ResponseOutputText,
    )

    from agentstate_reducer import MessageReducer, ReducerConfig
    from agentstate_reducer.openai_agents import ReducingSession, model_input_filter

    set_tracing_disabled(True)

    class Scripted(Model):
        """Two parallel ``lookup`` calls per question, then an answer from their outputs."""

        def __init__(self) -> None:
            self.sent: list[list[Any]] = []

        async def get_response(self, *args: Any, **kwargs: Any) -> ModelResponse:
            items = list(kwargs["input"])
            self.sent.append(items)
            n = len(self.sent)
            kind = "function_call_output"
            output: list[Any]
            if _field(items[-1], "type") == kind:
                outs = [_field(i, "output") for i in items[-2:] if _field(i, "type") == kind]
                text = "The results are " + ", ".join(str(o) for o in outs) + "."
                content = [ResponseOutputText(text=text, type="output_text", annotations=[])]
                output = [
                    ResponseOutputMessage(
                        id=f"m{n}",
                        content=content,
                        role="assistant",
                        status="completed",
                        type="message",
                    )
                ]
            else:
                output = [
                    ResponseFunctionToolCall(
                        id=f"f{n}-{k}",
                        call_id=f"c{n}-{k}",
                        name="lookup",
                        type="function_call",
                        arguments=json.dumps({"city": f"city {n}", "day": k}),
                    )
                    for k in (1, 2)
                ]
            return ModelResponse(output=output, usage=Usage(), response_id=None)

        def stream_response(self, *args: Any, **kwargs: Any) -> Any:
            raise NotImplementedError

    @function_tool
    def lookup(city: str, day: int) -> str:
        """Look the weather up."""
        return f"In {city} on day {day}: sunny, 21 degrees, light wind from the west. " * 3

    def reducer() -> MessageReducer:
        return MessageReducer(config=ReducerConfig(min_messages=20, max_messages=40))

    contenders = (
        "no reducer (SQLiteSession)",
        "agentstate-reducer ReducingSession (20..40)",
        "agentstate-reducer model_input_filter (20..40)",
        "SDK SessionSettings(limit=40)",
        "SDK SessionSettings(limit=5)",
    )
    out: list[Row] = []
    with tempfile.TemporaryDirectory() as folder:
        for index, label in enumerate(contenders):
            model = Scripted()
            agent = Agent(
                name="weather",
                instructions="You look up the weather.",
                model=model,
                tools=[lookup],
            )
            inner = SQLiteSession(f"chat-{index}", f"{folder}/chats.db")
            session: Any = inner
            config = RunConfig()
            if "ReducingSession" in label:
                session = ReducingSession(inner, reducer())
            elif "model_input_filter" in label:
                config = RunConfig(call_model_input_filter=model_input_filter(reducer()))
            elif "limit=" in label:
                limit = int(label.split("limit=")[1].rstrip(")"))
                config = RunConfig(session_settings=SessionSettings(limit=limit))
            for turn in range(turns):
                Runner.run_sync(
                    agent, f"Weather question {turn}?", session=session, run_config=config
                )
            stored = asyncio.run(inner.get_items())
            bad, kinds = _broken(model.sent)
            if "limit=" in label:  # what a run reads: the SDK drops the orphans it finds there
                read = asyncio.run(inner.get_items(limit))
                kinds += [f"read:{kind}" for kind in _broken([read])[1]]
            out.append(
                {
                    "framework": "openai-agents",
                    "contender": label,
                    "input_tokens": _count(model.sent[-1]),
                    "input_messages": len(model.sent[-1]),
                    "stored_items": len(stored),
                    "invalid_requests": bad,
                    "problems": kinds,
                    "requests": len(model.sent),
                }
            )
    return out


def _field(item: Any, key: str) -> Any:
    return item.get(key) if isinstance(item, dict) else getattr(item, key, None)


def _show(row: Row) -> str:
    return (
        f"{row['framework']:13} {row['contender']:64} input {row['input_tokens']:>7} tokens"
        f" / {row['input_messages']:>4} items, stored {row['stored_items']:>5},"
        f" broken requests {row['invalid_requests']}/{row['requests']}"
        f" {' '.join(row['problems'])}"
    )


def _ratios(rows: list[Row]) -> dict[str, float]:
    """Per framework: the last request's input tokens without the reducer over with it."""
    ratios: dict[str, float] = {}
    for framework in dict.fromkeys(r["framework"] for r in rows):
        mine = [r for r in rows if r["framework"] == framework]
        ours = next((r for r in mine if r["contender"].startswith("agentstate-reducer")), None)
        bare = mine[0]  # each worker lists the contender without any trimming first
        if ours and ours["input_tokens"]:
            ratios[f"{framework} input tokens, none / ours"] = round(
                bare["input_tokens"] / ours["input_tokens"], 2
            )
    return ratios


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--turns", type=int, default=200)
    parser.add_argument("--quick", action="store_true", help="40 turns")
    parser.add_argument("--only", nargs="*", choices=FRAMEWORKS, default=list(FRAMEWORKS))
    parser.add_argument("--worker", choices=("openai-agents",))
    args = parser.parse_args()
    turns = 40 if args.quick else args.turns
    if args.worker:
        for row in _openai_agents(turns):
            print(json.dumps(row))
        return
    rows: list[Row] = []
    if "openai-agents" in args.only:
        rows += openai_agents_rows(turns)
    if "pydantic-ai" in args.only and "google-adk" in args.only:
        rows += pydantic_adk_rows(turns)
    elif "pydantic-ai" in args.only or "google-adk" in args.only:
        import _frameworks_pydantic_adk as other

        single = other.pydantic_ai_rows if "pydantic-ai" in args.only else other.google_adk_rows
        rows += single(turns)
    if "strands" in args.only:
        rows += strands_rows(turns)
    print(f"{turns} turns; tokens: the default estimate of the last request's items")
    for row in rows:
        print(_show(row))
    result = {"bench": "frameworks", "ratios": _ratios(rows), "notes": {"turns": turns}}
    print("RESULT " + json.dumps(result))


if __name__ == "__main__":
    main()
