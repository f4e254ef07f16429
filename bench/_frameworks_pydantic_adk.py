"""The pydantic-ai and Google ADK rows of ``bench/frameworks.py``: model-input tokens and
stored items after a long tool-calling chat, with and without the reducer, beside each
framework's own trimming, and whether each breaks tool pairs.

Each framework runs in a virtualenv of its own (``bench/_peers.py``: this checkout and the
framework's package at the version the development environment has), where one worker
process runs every contender on the same scripted chat: per turn a question, two parallel
tool calls, their results, an answer. The model is the framework's own test model
(pydantic-ai's ``FunctionModel``) or a scripted ``BaseLlm`` (ADK), so nothing leaves the
machine. Tokens are counted with this package's default estimate on the last request's
messages; "stored" is what the framework keeps for the next turn (pydantic-ai: the history
``result.all_messages()`` returns; ADK: the session's events). Every list a model is sent
is checked with ``MessageReducer.validate`` (orphan results, calls without results, roles
not alternating).

Contenders:

* pydantic-ai: no processor; ``history_processor`` (``min_messages=20, max_messages=40``);
  the processor of pydantic-ai's documentation, ``keep_recent_messages``
  (``messages[-5:]``), as printed and with 40 (the same bound as ours).
* Google ADK: no callback; ``before_model_callback`` (the same reducer); ADK's event
  compaction (``EventsCompactionConfig(compaction_interval=5, overlap_size=1)`` with
  ``LlmEventSummarizer`` on a scripted model).

``rows(turns)`` returns one dict per contender; ``python bench/_frameworks_pydantic_adk.py``
prints them.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import subprocess
import sys
from collections.abc import Callable
from importlib.metadata import version
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent

Row = dict[str, Any]
"""``framework``, ``contender``, ``input_tokens``, ``input_messages``, ``stored_items``,
``invalid_requests`` (requests ``validate()`` finds a pairing or role problem in),
``problems`` (the kinds found), ``requests``."""


def rows(turns: int = 200) -> list[Row]:
    """Every contender of both frameworks, each framework in its own virtualenv."""
    return pydantic_ai_rows(turns) + google_adk_rows(turns)


def pydantic_ai_rows(turns: int = 200) -> list[Row]:
    """The pydantic-ai contenders, run in pydantic-ai's own virtualenv."""
    return _in_peer("pydantic-ai", f"pydantic-ai-slim=={_version('pydantic-ai-slim')}", turns)


def google_adk_rows(turns: int = 200) -> list[Row]:
    """The Google ADK contenders, run in ADK's own virtualenv."""
    return _in_peer("google-adk", f"google-adk=={_version('google-adk')}", turns)


def _version(package: str) -> str:
    try:
        return version(package)
    except Exception:  # not in this environment: the newest
        return ""


def _in_peer(name: str, requirement: str, turns: int) -> list[Row]:
    sys.path.insert(0, str(HERE))
    from _peers import peer_python

    python = peer_python(f"fw-{name}", [str(ROOT), requirement.rstrip("=")])
    out = subprocess.run(
        [str(python), __file__, "--worker", name, "--turns", str(turns)],
        capture_output=True, text=True, check=True, timeout=3600,
    )  # fmt: skip
    return [json.loads(line) for line in out.stdout.splitlines() if line.startswith("{")]


# -- workers (run inside the framework's virtualenv) -------------------------------------


def _count(messages: list[Any]) -> int:
    from agentstate_reducer import MessageReducer

    counter = MessageReducer()
    return sum(counter.count_tokens(m) for m in messages)


def _broken(lists: list[list[Any]]) -> tuple[int, list[str]]:
    """How many of ``lists`` have a pairing or role problem, and the kinds found."""
    from agentstate_reducer import MessageReducer

    checker = MessageReducer()
    bad = 0
    found: set[str] = set()
    for messages in lists:
        kinds = {p.kind for p in checker.validate(messages).problems} - {"over_budget"}
        bad += bool(kinds)
        found |= kinds
    return bad, sorted(found)


def _pydantic_ai(turns: int) -> list[Row]:
    from pydantic_ai import Agent
    from pydantic_ai.capabilities import ProcessHistory
    from pydantic_ai.messages import ModelMessage, ModelResponse, TextPart, ToolCallPart
    from pydantic_ai.models.function import AgentInfo, FunctionModel

    from agentstate_reducer import MessageReducer, ReducerConfig
    from agentstate_reducer.pydantic_ai import history_processor

    def model(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        results = [p for p in messages[-1].parts if p.part_kind == "tool-return"]
        if results:
            text = "The results are " + ", ".join(str(p.content) for p in results) + "."
            return ModelResponse(parts=[TextPart(text)])
        n = len(messages)
        return ModelResponse(
            parts=[
                ToolCallPart("lookup", {"city": f"city {n}", "day": k}, tool_call_id=f"c{n}-{k}")
                for k in (1, 2)
            ]
        )

    def lookup(city: str, day: int) -> str:
        return f"In {city} on day {day}: sunny, 21 degrees, light wind from the west. " * 3

    # Unannotated: pydantic-ai resolves a processor's annotations at run time, and these
    # names are local to this function.
    async def keep_recent_messages(messages):  # type: ignore[no-untyped-def]
        """pydantic-ai's documented example: keep only the last 5 messages."""
        return messages[-5:] if len(messages) > 5 else messages

    async def keep_recent_40(messages):  # type: ignore[no-untyped-def]
        return messages[-40:] if len(messages) > 40 else messages

    reducer = MessageReducer(config=ReducerConfig(min_messages=20, max_messages=40))
    contenders: dict[str, Callable[..., Any] | None] = {
        "no processor": None,
        "agentstate-reducer history_processor (20..40)": history_processor(reducer),
        "docs keep_recent_messages (last 5)": keep_recent_messages,
        "docs keep_recent_messages with 40": keep_recent_40,
    }
    out: list[Row] = []
    for label, processor in contenders.items():
        sent: list[list[Any]] = []

        async def record(messages, sent=sent):  # type: ignore[no-untyped-def]
            sent.append(list(messages))
            return messages

        capabilities: list[Any] = [ProcessHistory(processor)] if processor else []
        agent = Agent(
            FunctionModel(model),
            system_prompt="You look up the weather.",
            capabilities=[*capabilities, ProcessHistory(record)],
        )
        agent.tool_plain(lookup)
        history: list[ModelMessage] = []
        for turn in range(turns):
            history = agent.run_sync(
                f"Weather question {turn}?", message_history=history
            ).all_messages()
        out.append(
            {
                "framework": "pydantic-ai",
                "contender": label,
                "input_tokens": _count(sent[-1]),
                "input_messages": len(sent[-1]),
                "stored_items": len(history),
                "invalid_requests": _broken(sent)[0],
                "problems": _broken(sent)[1],
                "requests": len(sent),
            }
        )
    return out


def _google_adk(turns: int) -> list[Row]:
    from collections.abc import AsyncGenerator

    from google.adk.agents import LlmAgent
    from google.adk.apps.app import App, EventsCompactionConfig
    from google.adk.apps.llm_event_summarizer import LlmEventSummarizer
    from google.adk.models.base_llm import BaseLlm
    from google.adk.models.llm_request import LlmRequest
    from google.adk.models.llm_response import LlmResponse
    from google.adk.runners import Runner
    from google.adk.sessions import InMemorySessionService
    from google.genai import types

    from agentstate_reducer import MessageReducer, ReducerConfig
    from agentstate_reducer.google_adk import before_model_callback

    class Scripted(BaseLlm):
        model: str = "scripted"
        sent: list[list[Any]] = []  # noqa: RUF012 - a pydantic field

        async def generate_content_async(
            self, llm_request: LlmRequest, stream: bool = False
        ) -> AsyncGenerator[LlmResponse, None]:
            contents = list(llm_request.contents)
            self.sent.append(contents)
            last = contents[-1]
            if any(p.function_response for p in last.parts or ()):
                outs = [str(p.function_response.response) for p in last.parts or ()]
                parts = [types.Part(text="The results are " + ", ".join(outs))]
            else:
                n = len(contents)
                parts = [
                    types.Part(
                        function_call=types.FunctionCall(
                            name="lookup", args={"city": f"city {n}", "day": k}
                        )
                    )
                    for k in (1, 2)
                ]
            yield LlmResponse(content=types.Content(role="model", parts=parts))

    class Summarizer(BaseLlm):
        model: str = "summarizer"

        async def generate_content_async(
            self, llm_request: LlmRequest, stream: bool = False
        ) -> AsyncGenerator[LlmResponse, None]:
            text = "Earlier the user asked about the weather in several cities."
            yield LlmResponse(content=types.Content(role="model", parts=[types.Part(text=text)]))

    def lookup(city: str, day: int) -> str:
        """Look the weather up."""
        return f"In {city} on day {day}: sunny, 21 degrees, light wind from the west. " * 3

    out: list[Row] = []
    for label in (
        "no callback",
        "agentstate-reducer before_model_callback (20..40)",
        "ADK event compaction (every 5 invocations, overlap 1)",
    ):
        model = Scripted(sent=[])
        options: dict[str, Any] = {}
        if label.startswith("agentstate"):
            reducer = MessageReducer(config=ReducerConfig(min_messages=20, max_messages=40))
            options["before_model_callback"] = before_model_callback(reducer)
        agent = LlmAgent(
            name="weather", model=model, instruction="You look up the weather.",
            tools=[lookup], **options,
        )  # fmt: skip
        service = InMemorySessionService()
        if label.startswith("ADK"):
            compaction = EventsCompactionConfig(
                compaction_interval=5, overlap_size=1, summarizer=LlmEventSummarizer(Summarizer())
            )
            app = App(name="weather", root_agent=agent, events_compaction_config=compaction)
            runner = Runner(app=app, session_service=service)
        else:
            runner = Runner(agent=agent, app_name="weather", session_service=service)

        async def chat(runner: Runner = runner, service: Any = service) -> int:
            session = await service.create_session(app_name="weather", user_id="u")
            for turn in range(turns):
                question = types.Content(
                    role="user", parts=[types.Part(text=f"Weather question {turn}?")]
                )
                async for _ in runner.run_async(
                    user_id="u", session_id=session.id, new_message=question
                ):
                    pass
            stored = await service.get_session(
                app_name="weather", user_id="u", session_id=session.id
            )
            return len(stored.events)

        stored_items = asyncio.run(chat())
        out.append(
            {
                "framework": "google-adk",
                "contender": label,
                "input_tokens": _count(model.sent[-1]),
                "input_messages": len(model.sent[-1]),
                "stored_items": stored_items,
                "invalid_requests": _broken(model.sent)[0],
                "problems": _broken(model.sent)[1],
                "requests": len(model.sent),
            }
        )
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--turns", type=int, default=200)
    parser.add_argument("--worker", choices=("pydantic-ai", "google-adk"))
    args = parser.parse_args()
    if args.worker:
        import logging

        logging.disable(logging.WARNING)  # ADK logs each scripted call's missing usage
        work = _pydantic_ai if args.worker == "pydantic-ai" else _google_adk
        for row in work(args.turns):
            print(json.dumps(row))
        return
    for row in rows(args.turns):
        print(
            f"{row['framework']:12} {row['contender']:55} input {row['input_tokens']:>7} tokens"
            f" / {row['input_messages']:>4} messages, stored {row['stored_items']:>5},"
            f" invalid requests {row['invalid_requests']}/{row['requests']}"
            f" {' '.join(row['problems'])}"
        )


if __name__ == "__main__":
    main()
