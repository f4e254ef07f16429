"""Without ``langchain`` (an install of ``[langgraph]`` but not ``[agents]``), the agent
helpers say what to install instead of failing with ``No module named 'langchain'``.

Each check runs in a fresh interpreter whose import system refuses ``langchain`` and its
submodules (``langchain_core``, a separate distribution, stays importable), as on such an
install; tests/install/test_agents_extra.py checks the same on a real one.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent

_NO_LANGCHAIN = """
import importlib.abc, json, sys

class _NoLangChain(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path=None, target=None):
        if name == "langchain" or name.startswith("langchain."):
            raise ModuleNotFoundError(f"No module named {name!r}", name=name)
        return None

sys.meta_path.insert(0, _NoLangChain())
try:
    exec(sys.argv[1])
except ImportError as error:
    cause = error.__cause__
    print(json.dumps({"type": type(error).__name__, "message": str(error),
                      "cause": type(cause).__name__ if cause else None,
                      "cause_name": getattr(cause, "name", None)}))
else:
    print(json.dumps(None))
"""

STATEMENTS = [
    "import agentstate_reducer.langgraph.agents",
    "from agentstate_reducer.langgraph import ReducerMiddleware",
    "from agentstate_reducer.langgraph import make_pre_model_hook",
    "from agentstate_reducer.langgraph.agents import AgentMode",
]


@pytest.mark.parametrize("statement", STATEMENTS)
def test_agent_helpers_without_langchain_name_the_agents_extra(statement: str) -> None:
    """An ImportError naming the install line, with the original ModuleNotFoundError as
    its ``__cause__``; the rest of the LangGraph support still imports."""
    proc = subprocess.run(
        [sys.executable, "-c", _NO_LANGCHAIN, statement],
        capture_output=True, text=True, timeout=120, cwd=ROOT,
        env={**os.environ, "PYTHONPATH": str(ROOT)}, check=False,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    raised = json.loads(proc.stdout.strip().splitlines()[-1])
    assert raised is not None, f"{statement} imported without langchain"
    assert raised["type"] == "ImportError"
    assert 'pip install "agentstate-reducer[agents]"' in raised["message"]
    assert "langchain" in raised["message"]
    assert raised["cause"] == "ModuleNotFoundError"
    assert raised["cause_name"].split(".")[0] == "langchain"


def test_the_langgraph_support_imports_without_langchain() -> None:
    proc = subprocess.run(
        [sys.executable, "-c", _NO_LANGCHAIN,
         "from agentstate_reducer.langgraph import ReducingCheckpointSaver, LLMSummarizer"],
        capture_output=True, text=True, timeout=120, cwd=ROOT,
        env={**os.environ, "PYTHONPATH": str(ROOT)}, check=False,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout.strip().splitlines()[-1]) is None
