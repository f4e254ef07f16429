"""Migration from langgraph-checkpoint-cosmosdb 0.4: threads the real published saver wrote
on the loopback server read the same through our saver after migrate."""

from __future__ import annotations

import os
import subprocess
import sys
import warnings
from typing import Any

import pytest
from agentstate_cosmosdb import CosmosDBSaver, migrate_from_langgraph_checkpoint_cosmosdb
from agentstate_cosmosdb.settings import tls_hook
from azure.cosmos import CosmosClient
from langchain_core.messages import AIMessage, HumanMessage
from langgraph.graph import END, START, MessagesState, StateGraph
from langgraph.types import Command, interrupt

from tests._cosmos import import_published_saver

from .conftest import DATABASE, CosmosTestServer, new_container, saver_kwargs

pytestmark = pytest.mark.cosmos

published = import_published_saver()


def chat_graph(saver: Any) -> Any:
    def reply(state: MessagesState) -> dict[str, Any]:
        return {"messages": [AIMessage(content=f"re: {state['messages'][-1].content}")]}

    def ask(state: MessagesState) -> dict[str, Any]:
        if state["messages"][-2].content == "ask me":
            answer = interrupt("yes or no?")
            return {"messages": [HumanMessage(content=f"answered {answer}")]}
        return {}

    builder = StateGraph(MessagesState)
    builder.add_node("reply", reply)
    builder.add_node("ask", ask)
    builder.add_edge(START, "reply")
    builder.add_edge("reply", "ask")
    builder.add_edge("ask", END)
    return builder.compile(checkpointer=saver)


def snapshot(graph: Any, config: Any) -> Any:
    state = graph.get_state(config)
    history = [
        (
            s.config["configurable"]["checkpoint_id"],
            s.values,
            s.next,
            s.metadata,
            (s.parent_config or {}).get("configurable", {}).get("checkpoint_id"),
        )
        for s in graph.get_state_history(config)
    ]
    tuples = list(graph.checkpointer.list(config))
    writes = [sorted((w[0], w[1], repr(w[2])) for w in t.pending_writes or []) for t in tuples]
    return state.values, state.next, [str(i.value) for i in state.interrupts], history, writes


def test_migrated_threads_read_the_same(
    server: CosmosTestServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Threads written by the published saver (a chat of several turns, and one stopped at an
    interrupt, with its pending writes) read back after migrate_from_langgraph_checkpoint_
    cosmosdb with the same state, the same history (ids, values, metadata, parents) and the
    same pending writes; a second migration changes nothing."""
    monkeypatch.setenv("COSMOSDB_ENDPOINT", server.endpoint)
    monkeypatch.setenv("COSMOSDB_KEY", server.key)
    source_container = new_container()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the published saver leaves TLS to the SDK
        old = published.CosmosDBSaver(database_name="published", container_name=source_container)
        old_graph = chat_graph(old)
        chat = {"configurable": {"thread_id": "chat-1"}}
        for turn in range(4):
            old_graph.invoke({"messages": [HumanMessage(content=f"q{turn}", id=f"h{turn}")]}, chat)
        paused = {"configurable": {"thread_id": "paused"}}
        old_graph.invoke({"messages": [HumanMessage(content="ask me", id="a1")]}, paused)
        before = {
            name: snapshot(old_graph, cfg) for name, cfg in (("chat", chat), ("paused", paused))
        }
    assert before["paused"][1] == ("ask",)  # stopped at the interrupt

    source = (
        CosmosClient(
            server.endpoint, credential=server.key, raw_request_hook=tls_hook(str(server.ca_file))
        )
        .get_database_client("published")
        .get_container_client(source_container)
    )
    target_container = new_container()
    with CosmosDBSaver(DATABASE, target_container, **saver_kwargs(server)) as target:
        report = migrate_from_langgraph_checkpoint_cosmosdb(source, target)
        assert report.threads == 2 and report.checkpoints == len(before["chat"][3]) + len(
            before["paused"][3]
        )
        again = migrate_from_langgraph_checkpoint_cosmosdb(source, target)
        assert again.checkpoints == report.checkpoints
    with CosmosDBSaver(DATABASE, target_container, **saver_kwargs(server)) as fresh:
        graph = chat_graph(fresh)
        after = {name: snapshot(graph, cfg) for name, cfg in (("chat", chat), ("paused", paused))}
        assert after == before
        graph.invoke(Command(resume="yes"), paused)
        assert graph.get_state(paused).values["messages"][-1].content == "answered yes"


def test_migrate_command_line(server: CosmosTestServer) -> None:
    """python -m agentstate_cosmosdb migrate copies a thread and says how much it copied; a
    wrong connection string is refused in one line."""
    env = {**os.environ, "COSMOSDB_ENDPOINT": server.endpoint, "COSMOSDB_KEY": server.key}
    env["REQUESTS_CA_BUNDLE"] = str(server.ca_file)
    source_container = new_container()
    code = (
        "import warnings; warnings.simplefilter('ignore');"
        "from langgraph_checkpoint_cosmosdb import CosmosDBSaver as S;"
        "from langgraph.checkpoint.conformance.test_utils import generate_checkpoint as g;"
        "from langgraph.checkpoint.conformance.test_utils import generate_metadata as m;"
        f"s = S(database_name='published', container_name={source_container!r});"
        "cfg = {'configurable': {'thread_id': 'cli', 'checkpoint_ns': ''}};"
        "cp = g(channel_values={'a': [1]}, channel_versions={'a': '1'});"
        "s.put(cfg, cp, m(), {'a': '1'})"
    )
    subprocess.run([sys.executable, "-c", code], env=env, check=True, timeout=120)
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "agentstate_cosmosdb",
            "migrate",
            "--source-database",
            "published",
            "--source-container",
            source_container,
            "--database",
            DATABASE,
            "--container",
            new_container(),
        ],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 0, proc.stderr
    assert "copied 1 checkpoints and 0 pending writes of 1 threads" in proc.stdout
    bad = subprocess.run(
        [
            sys.executable,
            "-m",
            "agentstate_cosmosdb",
            "migrate",
            "--source-database",
            "x",
            "--source-container",
            "y",
            "--database",
            "a",
            "--container",
            "b",
            "--conn-string",
            "AccountKey=abc",
        ],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert bad.returncode == 1 and "AccountEndpoint" in bad.stdout and "abc" not in bad.stdout
