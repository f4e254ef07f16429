"""Recall and calibration in every wire format: the memory block is written in the list's
own format and kind of message (roles alternating where the format needs it), recognised
by ``is_memory`` and kept as a block; what each provider's response reports is read in its
own shape (the SDKs' objects included).

Generated dialogues rendered in each format (``tests/strategies.py``), a real
``InMemoryStore`` with a deterministic embedding, the Anthropic, OpenAI and google-genai
SDKs' own types.
"""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from langgraph.store.memory import InMemoryStore

from agentstate_reducer import MessageReducer, ReducerConfig
from agentstate_reducer.langgraph import Recall, StoreMemory
from agentstate_reducer.langgraph.testing import HashedWordEmbeddings
from agentstate_reducer.messages import (
    MEMORY_HEADER,
    detect,
    is_memory,
    is_summary,
    read_view,
    slots_of,
)
from agentstate_reducer.policy import DropOldest
from agentstate_reducer.tokens import reported_input_tokens
from agentstate_reducer.validate import (
    BAD_FIRST_MESSAGE,
    DANGLING_CALL,
    ORPHAN_RESULT,
    ROLES_NOT_ALTERNATING,
    UNEXPECTED_ROLE,
)
from tests.strategies import WIRE_FORMATS, dialogues, render_dialogue

USER = ("memories", "user-7")
FACT = "The vault code for the Lisbon office is 7731."
VALIDITY = (ORPHAN_RESULT, DANGLING_CALL, ROLES_NOT_ALTERNATING, UNEXPECTED_ROLE, BAD_FIRST_MESSAGE)


def _store() -> InMemoryStore:
    store = InMemoryStore(index={"dims": 64, "embed": HashedWordEmbeddings(64), "fields": ["text"]})
    StoreMemory(store, namespace=USER)([{"role": "user", "content": FACT}], "earlier")
    return store


def _text(message: Any) -> str:
    return "\n".join(slot.text for slot in slots_of(message) if slot.kind == "text")


@settings(max_examples=120)
@given(fmt=st.sampled_from(WIRE_FORMATS), elements=dialogues(max_turns=4))
def test_the_memory_block_is_written_in_every_format_and_keeps_the_list_valid(
    fmt: str, elements: list[Any]
) -> None:
    """In every format: the view holds one memory block (one message, or two where the
    format's roles alternate and no single side fits), of the list's format, recognised by
    is_memory and not by is_summary, holding the memory, before the newest question; the
    view breaks no rule of the format the list without it kept."""
    messages, _ = render_dialogue(elements, fmt)
    questions = [m for m in messages if read_view(m).role == "human"]
    if not questions or not _text(questions[-1]).strip():
        return  # no question to search with (Recall then adds nothing)
    reducer = MessageReducer(
        config=ReducerConfig(
            max_tokens=100_000,
            preserve_first="system",
            policy=[Recall(_store(), namespace=USER, k=1), DropOldest()],
        )
    )
    plain = MessageReducer(config=ReducerConfig(max_tokens=100_000, preserve_first="system"))
    view = reducer.view(messages).surviving
    blocks = [i for i, m in enumerate(view) if is_memory(m)]
    assert 1 <= len(blocks) <= 2 and blocks == list(range(blocks[0], blocks[0] + len(blocks)))
    first = view[blocks[0]]
    assert _text(first).startswith(MEMORY_HEADER) and "7731" in _text(first)
    assert not any(is_summary(view[i]) for i in blocks)
    assert all(read_view(view[i]).summary for i in blocks)  # kept as a block
    assert detect(view).name == detect(messages).name
    before = {p.kind for p in plain.validate(messages).problems if p.kind in VALIDITY}
    after = {p.kind for p in reducer.validate(view).problems if p.kind in VALIDITY}
    assert after <= before
    question = max(i for i, m in enumerate(view) if read_view(m).role == "human")
    assert question > blocks[-1]


@settings(max_examples=60)
@given(fmt=st.sampled_from(WIRE_FORMATS), elements=dialogues(max_turns=4))
def test_memory_blocks_are_never_handed_over_in_any_format(fmt: str, elements: list[Any]) -> None:
    """A view with its memory block, reduced as a stored list (a view written back): the
    block is kept as a block, and no hook receives it."""
    messages, _ = render_dialogue(elements, fmt)
    questions = [m for m in messages if read_view(m).role == "human"]
    if not questions or not _text(questions[-1]).strip():
        return
    store = _store()
    view = (
        MessageReducer(
            config=ReducerConfig(
                max_tokens=100_000,
                preserve_first="system",
                policy=[Recall(store, namespace=USER, k=1), DropOldest()],
            )
        )
        .view(messages)
        .surviving
    )
    handed: list[Any] = []
    reducer = MessageReducer(
        config=ReducerConfig(
            min_messages=1,
            max_messages=2,
            preserve_first="system",
            on_prune=[lambda pruned, namespace: handed.extend(pruned)],
        )
    )
    result = reducer.reduce(view)
    assert not any(is_memory(m) for m in handed)
    assert any(is_memory(m) for m in result.surviving)


# -- what each provider's response reports, in its own shape -------------------------------


def test_the_anthropic_sdks_message_reports_its_input_with_the_cache() -> None:
    """An ``anthropic.types.Message`` (as ``messages.create`` returns it) appended to the
    list reports input, cache reads and cache writes; calibration anchors on it."""
    anthropic = pytest.importorskip("anthropic")
    response = anthropic.types.Message(
        id="msg_1",
        type="message",
        role="assistant",
        model="claude-sonnet-4-5",
        content=[{"type": "text", "text": "Noted."}],
        stop_reason="end_turn",
        usage={
            "input_tokens": 12,
            "output_tokens": 3,
            "cache_read_input_tokens": 900,
            "cache_creation_input_tokens": 100,
        },
    )
    assert reported_input_tokens(response) == (1012, "usage.input_tokens")
    assert reported_input_tokens(response.model_dump()) == (1012, "usage.input_tokens")


def test_openai_chat_and_responses_usage_is_read() -> None:
    """OpenAI's Chat ``usage.prompt_tokens`` and the Responses API's ``usage.input_tokens``,
    on the SDK's own types (a completion, a response) and as dicts."""
    openai = pytest.importorskip("openai")
    from openai.types import CompletionUsage
    from openai.types.responses import ResponseUsage

    chat_usage = CompletionUsage(prompt_tokens=321, completion_tokens=5, total_tokens=326)
    message = {"role": "assistant", "content": "Noted.", "usage": chat_usage.model_dump()}
    assert reported_input_tokens(message) == (321, "usage.prompt_tokens")
    responses_usage = ResponseUsage(
        input_tokens=444,
        input_tokens_details={"cached_tokens": 400, "cache_write_tokens": 0},
        output_tokens=7,
        output_tokens_details={"reasoning_tokens": 0},
        total_tokens=451,
    )
    item = {"type": "message", "role": "assistant", "content": [], "usage": responses_usage}
    assert reported_input_tokens(item) == (444, "usage.input_tokens")
    assert openai is not None


def test_gemini_usage_metadata_is_read_from_the_sdks_type() -> None:
    """google-genai's ``GenerateContentResponseUsageMetadata`` (as ADK's events carry it)."""
    genai_types = pytest.importorskip("google.genai.types")
    usage = genai_types.GenerateContentResponseUsageMetadata(
        prompt_token_count=2048, cached_content_token_count=1024, candidates_token_count=9
    )
    event = {"role": "model", "parts": [{"text": "Noted."}], "usage_metadata": usage}
    assert reported_input_tokens(event) == (2048, "usage_metadata.prompt_token_count")


@pytest.mark.parametrize("fmt", ["anthropic", "gemini", "responses", "bedrock", "chat"])
def test_calibration_anchors_on_a_raw_format_response(fmt: str) -> None:
    """A list in a provider's own format whose model message carries that provider's usage
    shape: the messages before it count the report, only the rest is estimated."""
    question = {
        "anthropic": {"role": "user", "content": [{"type": "text", "text": "Where is it?"}]},
        "gemini": {"role": "user", "parts": [{"text": "Where is it?"}]},
        "responses": {"type": "message", "role": "user", "content": "Where is it?"},
        "bedrock": {"role": "user", "content": [{"text": "Where is it?"}]},
        "chat": {"role": "user", "content": "Where is it?"},
    }[fmt]
    answer: dict[str, Any] = {
        "anthropic": {
            "role": "assistant",
            "content": [{"type": "text", "text": "In Lisbon."}],
            "usage": {"input_tokens": 900, "output_tokens": 4},
        },
        "gemini": {
            "role": "model",
            "parts": [{"text": "In Lisbon."}],
            "usage_metadata": {"prompt_token_count": 900},
        },
        "responses": {
            "type": "message",
            "role": "assistant",
            "content": [{"type": "output_text", "text": "In Lisbon."}],
            "usage": {"input_tokens": 900},
        },
        "bedrock": {
            "role": "assistant",
            "content": [{"text": "In Lisbon."}],
            "usage": {"inputTokens": 100, "cacheReadInputTokens": 800, "outputTokens": 4},
        },
        "chat": {"role": "assistant", "content": "In Lisbon.", "usage": {"prompt_tokens": 900}},
    }[fmt]
    follow = dict(question)
    reducer = MessageReducer(config=ReducerConfig(max_tokens=100_000, calibrate=True, format=fmt))
    history = [question, answer, follow]
    result = reducer.reduce(history)
    calibration = result.calibration
    assert calibration is not None and calibration.anchor == 1
    assert calibration.measured == 900
    assert result.tokens_before == 900 + calibration.estimated
