"""langmem's memory tools on the relevance benchmark's chats (a worker process).

Runs in its own venv (``bench/_peers.py``, environment ``langmem``: ``langmem`` and this
checkout, for the same deterministic embedding). For each chat, langmem's
``create_manage_memory_tool`` and ``create_search_memory_tool`` are invoked as a scripted
agent would call them (no model, no network): ``manage_memory(content=..., action="create")``
for every user message as it arrives, then ``search_memory(query=question, limit=k)`` for
the final question, on an ``InMemoryStore`` indexed with ``HashedWordEmbeddings``. The fact
counts as recalled when the search's answer holds its text.

Input: a JSON file ``{"k": 3, "chats": [{"messages": [...], "fact": "...", "question": "..."}]}``;
output on stdout: one JSON line ``{"found": [bool, ...], "seconds": [float, ...]}`` (seconds:
CPU time of the final search).
"""

from __future__ import annotations

import json
import sys
import time
from typing import Any

from langgraph.store.memory import InMemoryStore
from langmem import create_manage_memory_tool, create_search_memory_tool

from agentstate_reducer.langgraph.testing import HashedWordEmbeddings


def run(chat: dict[str, Any], k: int) -> tuple[bool, float]:
    store = InMemoryStore(index={"dims": 256, "embed": HashedWordEmbeddings(256)})
    namespace = ("memories", "user")
    manage = create_manage_memory_tool(namespace, store=store)
    search = create_search_memory_tool(namespace, store=store)
    for message in chat["messages"][:-1]:
        if message["role"] == "user":
            manage.invoke({"content": message["content"], "action": "create"})
    start = time.process_time()
    answer = search.invoke({"query": chat["question"], "limit": k})
    seconds = time.process_time() - start
    wanted = " ".join(chat["fact"].split())
    return wanted in " ".join(str(answer).split()), seconds


def main() -> None:
    with open(sys.argv[1], encoding="utf-8") as handle:
        data = json.load(handle)
    found, seconds = [], []
    for chat in data["chats"]:
        hit, spent = run(chat, data["k"])
        found.append(hit)
        seconds.append(spent)
    sys.stdout.write(json.dumps({"found": found, "seconds": seconds}) + "\n")


if __name__ == "__main__":
    main()
