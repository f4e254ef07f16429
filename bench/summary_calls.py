"""How many summarizer LLM calls a 200-turn tool-calling chat costs, ours against
LangChain's ``SummarizationMiddleware``, and how many more LangGraph's replays cost.

Every contender runs the same conversation: a ``create_agent`` tool-calling agent (a
scripted calculator model: question, tool call, tool result, answer per turn) whose history
is summarised once it passes 20 messages, keeping about 10. The summarizer is a scripted
chat model that only counts its calls, so the figures are calls, not seconds.

* ours: ``ReducerMiddleware`` with ``LLMSummarizer`` (the running summary is folded, counts
  towards the bound, and is made once per prune);
* LangChain: ``SummarizationMiddleware(trigger=("messages", 20), keep=("messages", 10))``;
* replays: our state channel (``Annotated[list, reducer.as_langgraph_reducer()]``) in a
  graph that asks for approval (``interrupt()``) every turn and reads the state three times
  while it waits, so LangGraph replays the pending writes through the channel each time.

Target: ours makes exactly one call per prune, and none for replays.

    python bench/summary_calls.py            # 200 turns
    python bench/summary_calls.py --quick    # 60 turns
"""

from __future__ import annotations

import argparse
import json
import warnings
from typing import Annotated, Any

from langchain.agents import create_agent
from langchain.agents.middleware import SummarizationMiddleware
from langchain_core.messages import AIMessage, HumanMessage
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.graph import START, StateGraph
from langgraph.types import Command, interrupt
from typing_extensions import TypedDict

from agentstate_reducer import MessageReducer, ReducerConfig
from agentstate_reducer.langgraph import LLMSummarizer, ReducerMiddleware
from agentstate_reducer.langgraph.testing import ScriptedChatModel, tool_call

TRIGGER, KEEP = 20, 10


def _calculator() -> ScriptedChatModel:
    def step(messages: list[Any]) -> Any:
        last = messages[-1]
        if isinstance(last, HumanMessage):
            return tool_call("add", {"a": len(messages), "b": 1})
        return f"The sum is {last.content}."

    return ScriptedChatModel(script=[step], cycle=True, strict=True)


def _add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


class Counting:
    """A summarizer chat model that answers briefly and counts its calls."""

    def __init__(self) -> None:
        self.calls = 0
        self.model = ScriptedChatModel(script=[self._answer], cycle=True, strict=False)

    def _answer(self, messages: list[Any]) -> str:
        self.calls += 1
        return f"summary {self.calls}: the user asked for sums; the tool answered them."


def _summarizing_reducer(counting: Counting, prunes: list[int]) -> MessageReducer:
    """Ours: a running summary by LLMSummarizer above TRIGGER messages, keeping KEEP."""
    return MessageReducer(
        config=ReducerConfig(
            min_messages=KEEP,
            max_messages=TRIGGER,
            summarize_fn=LLMSummarizer(counting.model, max_summary_tokens=80),
            inject_summary=True,
            on_prune=[lambda messages, namespace: prunes.append(len(messages))],
        )
    )


def ours(turns: int) -> dict[str, Any]:
    counting = Counting()
    prunes: list[int] = []
    reducer = _summarizing_reducer(counting, prunes)
    agent = create_agent(
        _calculator(),
        [_add],
        system_prompt="You add numbers.",
        middleware=[ReducerMiddleware(reducer)],
        checkpointer=InMemorySaver(),
    )
    config: Any = {"configurable": {"thread_id": "ours"}}
    for n in range(turns):
        agent.invoke({"messages": [HumanMessage(f"question {n}")]}, config)
    final = agent.get_state(config).values["messages"]
    return {"calls": counting.calls, "prunes": len(prunes), "final_messages": len(final)}


def langchain(turns: int) -> dict[str, Any]:
    counting = Counting()
    agent = create_agent(
        _calculator(),
        [_add],
        system_prompt="You add numbers.",
        middleware=[
            SummarizationMiddleware(
                counting.model, trigger=("messages", TRIGGER), keep=("messages", KEEP)
            )
        ],
        checkpointer=InMemorySaver(),
    )
    config: Any = {"configurable": {"thread_id": "langchain"}}
    for n in range(turns):
        agent.invoke({"messages": [HumanMessage(f"question {n}")]}, config)
    final = agent.get_state(config).values["messages"]
    return {"calls": counting.calls, "final_messages": len(final)}


def replays(turns: int) -> dict[str, Any]:
    counting = Counting()
    prunes: list[int] = []
    reducer = _summarizing_reducer(counting, prunes)

    # Built with the call syntax: LangGraph reads the hints at run time, and this module
    # postpones annotations.
    State = TypedDict("State", {"messages": Annotated[list[Any], reducer.as_langgraph_reducer()]})  # noqa: UP013

    def answer(state: Any) -> dict[str, Any]:
        return {"messages": [AIMessage(f"draft answer {len(state['messages'])}")]}

    def approve(state: Any) -> dict[str, Any]:
        verdict = interrupt("approve the draft?")
        return {"messages": [HumanMessage(f"approved: {verdict}"), AIMessage("done")]}

    builder: StateGraph[Any] = StateGraph(State)
    builder.add_node("answer", answer)
    builder.add_node("approve", approve)
    builder.add_edge(START, "answer")
    builder.add_edge("answer", "approve")
    graph = builder.compile(checkpointer=InMemorySaver())
    config: Any = {"configurable": {"thread_id": "replays"}}
    reads = 0
    for n in range(turns):
        graph.invoke({"messages": [HumanMessage(f"question {n}")]}, config)
        for _ in range(3):
            graph.get_state(config)
            reads += 1
        graph.invoke(Command(resume="yes"), config)
    return {"calls": counting.calls, "prunes": len(prunes), "state_reads": reads}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true", help="60 turns instead of 200")
    parser.add_argument("--turns", type=int, default=None)
    args = parser.parse_args()
    turns = args.turns or (60 if args.quick else 200)
    warnings.simplefilter("ignore")  # deprecation notices of the peers' code paths
    mine, theirs, replayed = ours(turns), langchain(turns), replays(turns)
    print(f"{turns}-turn tool-calling chat, summarised above {TRIGGER} messages, keeping {KEEP}")
    print(f"  {'contender':<34} {'summary calls':>14} {'prunes':>7} {'final list':>11}")
    print(
        f"  {'ours (ReducerMiddleware)':<34} {mine['calls']:>14} {mine['prunes']:>7} "
        f"{mine['final_messages']:>11}"
    )
    print(
        f"  {'LangChain SummarizationMiddleware':<34} {theirs['calls']:>14} {'':>7} "
        f"{theirs['final_messages']:>11}"
    )
    print(
        f"  {'ours, channel + interrupts':<34} {replayed['calls']:>14} "
        f"{replayed['prunes']:>7}   ({replayed['state_reads']} get_state replays)"
    )
    per_prune = mine["prunes"] / mine["calls"] if mine["calls"] else 0.0
    replay_ratio = replayed["prunes"] / replayed["calls"] if replayed["calls"] else 0.0
    vs_langchain = theirs["calls"] / mine["calls"] if mine["calls"] else 0.0
    result = {
        "bench": "summary_calls",
        "ratios": {
            "summary calls, SummarizationMiddleware / ours": round(vs_langchain, 2),
            "ours: prunes / summary calls": round(per_prune, 2),
            "ours with replays: prunes / summary calls": round(replay_ratio, 2),
        },
        "targets": {
            "ours: prunes / summary calls": {"target": 1.0, "met": mine["calls"] == mine["prunes"]},
            "ours with replays: prunes / summary calls": {
                "target": 1.0,
                "met": replayed["calls"] == replayed["prunes"],
            },
        },
        "ours": mine,
        "langchain": theirs,
        "replays": replayed,
        "turns": turns,
    }
    print("RESULT " + json.dumps(result))


if __name__ == "__main__":
    main()
