"""The default token estimate's fast path against its plain reference, and its tables.

``tokens._text_cost`` counts every feature in C-level passes (a pair string read through a
weight table and added up by ``zlib.adler32``, one translate per run feature, one regex that
finds the words of seven bytes or more and one dict look-up each for the known words);
``tokens._text_features`` counts the same features with plain loops and is what
``bench/token_accuracy.py --calibrate`` fits the costs on. Their accuracy against
cl100k_base is in tests/test_token_accuracy.py.
"""

from __future__ import annotations

import math
import operator
import sys
from pathlib import Path

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from agentstate_reducer.tokens import estimate as tokens
from tests.strategies import estimate_texts

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "bench"))

from _token_corpus import KINDS, corpus  # noqa: E402


def reference(text: str) -> float:
    """The estimate before rounding, the slow and obvious way."""
    return sum(map(operator.mul, tokens._TOKENS_PER_FEATURE, tokens._text_features(text)))


@settings(max_examples=300)
@given(estimate_texts())
@example("\ud800 lone surrogate")
@example("Construction of the configuration, “reconstruction”, CONFIGURATION and x" * 3)
@example("Hőmérséklet és őszi szél; Řeka a Ěmil")
@example("a" + " " * 40 + "\t\n" * 3 + "b\r\n")
def test_the_fast_path_counts_what_the_reference_counts(text: str) -> None:
    """For any text (any script, controls, lone surrogates, known words, whitespace runs),
    the C-level estimate equals the sum of each feature's plain count times its cost."""
    assert tokens._text_cost(text) == pytest.approx(reference(text), abs=1e-9)


@pytest.mark.parametrize("kind", sorted(KINDS))
def test_the_fast_path_counts_what_the_reference_counts_on_the_corpus(kind: str) -> None:
    """The same on every kind of the corpus the costs were fitted on."""
    for text in corpus(kind, 9, half=1, messages=5):
        assert tokens._text_cost(text) == pytest.approx(reference(text), abs=1e-9)


def test_a_text_longer_than_the_precomputed_masks_is_counted_alike() -> None:
    """A text longer than the masks kept for the pair string (64 KiB) gets masks of its own
    and is counted as its parts are."""
    part = "Ünïcode and 12345 configuration\n" * 100
    text = part * (tokens._MASK_BYTES // len(part) + 2)
    assert len(text) > tokens._MASK_BYTES
    assert tokens._text_cost(text) == pytest.approx(reference(text), rel=1e-12)


@pytest.mark.parametrize("offset", [-1, 0, 1])
@pytest.mark.parametrize("slices", [1, 2, 3])
def test_texts_at_the_edges_of_each_adler32_slice_are_counted_alike(
    slices: int, offset: int
) -> None:
    """The fast path sums the pair weights in one adler32, in two, or by _units' loop,
    by the pair string's length (the text's characters and one): texts whose pair string
    ends just before, at and just after each slice's end are counted as the reference
    counts them, with the heaviest weights the corpus has (digits after spaces, emoji)."""
    span = tokens._estimate_tables().span
    length = slices * span + offset - 1  # characters: the pair string is one longer
    for part in (" 7", "\U0001f600", "Wörter configuration 12 "):
        text = (part * (length // len(part) + 1))[:length]
        assert len(text) == length
        assert tokens._text_cost(text) == pytest.approx(reference(text), rel=1e-12, abs=1e-9)


def test_a_lone_surrogate_is_counted_rather_than_raising() -> None:
    """str.encode refuses a lone surrogate (JSON can carry one); the estimate counts it."""
    assert tokens.estimate_text_tokens("\udc80") >= 1
    assert tokens.estimate_text_tokens("x\ud83d") >= 2


@given(st.binary(max_size=3000), st.integers(min_value=0, max_value=tokens._MAX_WEIGHT))
@example(b"\xff" * 1000, 0xFF)
def test_adler32_adds_up_any_weights_its_span_allows(data: bytes, heaviest: int) -> None:
    """The pair weights' sum read from Adler-32 over slices equals the plain sum of the
    bytes, for any bytes no heavier than the heaviest weight the span is set from."""
    weights = bytes(min(byte, heaviest) for byte in data)
    span = (tokens._ADLER_MODULUS - 1) // max(1, heaviest)
    assert tokens._units(weights, span) == sum(weights)


def test_the_span_keeps_the_heaviest_pair_string_below_the_modulus() -> None:
    """The shipped table's span: that many of its heaviest weight still add up exactly."""
    tables = tokens._estimate_tables()
    heaviest = bytes([max(tables.weights)]) * (3 * tables.span + 7)
    assert tables.span * max(tables.weights) < tokens._ADLER_MODULUS
    assert tokens._units(heaviest, tables.span) == sum(heaviest)


def test_the_weight_table_is_each_pair_bytes_cost() -> None:
    """Each pair byte's weight is the sum of the costs of the pair features it counts."""
    pairs = len(tokens._PAIR_FEATURES)
    costs = tokens._TOKENS_PER_FEATURE[:pairs]
    weights = tokens._pair_weights(costs)
    for pair in range(256):
        after, cls = tokens._pair_classes(pair)
        expected = sum(
            cost
            for cost, (_, counts) in zip(costs, tokens._PAIR_FEATURES, strict=True)
            if counts(after, cls)
        )
        assert weights[pair] == round(expected * tokens._PAIR_UNIT)


@pytest.mark.parametrize(
    ("costs", "problem"),
    [((0.1,), "multiples of 1/32"), ((-1 / 32,), "multiples of 1/32"), ((8.0,), "over")],
    ids=["off-grid", "negative", "too-high"],
)
def test_pair_costs_the_tables_cannot_hold_are_refused(
    costs: tuple[float, ...], problem: str
) -> None:
    """A cost off the 1/32 grid, negative, or summing past what a weight byte holds is
    refused when the tables are built, naming the problem."""
    full = costs + (0.0,) * (len(tokens._PAIR_FEATURES) - len(costs))
    with pytest.raises(ValueError, match=problem):
        tokens._pair_weights(full)


def test_the_shipped_costs_of_pair_features_are_on_the_grid() -> None:
    """The costs tokens.py ships build the tables (what --calibrate guarantees)."""
    pairs = len(tokens._PAIR_FEATURES)
    tokens._pair_weights(tokens._TOKENS_PER_FEATURE[:pairs])
    assert len(tokens._TOKENS_PER_FEATURE) == len(tokens._FEATURES)


@pytest.mark.parametrize(
    ("word", "short"),
    [(" construction", " con"), (" Construction", " Con"), (" infrastructure", " in")],
)
def test_a_long_word_cl100k_base_has_whole_costs_what_a_short_word_costs(
    word: str, short: str
) -> None:
    """A word in the shipped list, lower case or capitalised, is spared its length cost."""
    assert tokens._text_cost(word) == pytest.approx(tokens._text_cost(short))
    assert tokens.estimate_text_tokens(" construction") == 1


def test_a_long_word_in_upper_case_or_unknown_costs_by_its_length() -> None:
    """The same letters in upper case (cl100k_base splits them) or a made-up word of the
    same length cost more than the known word."""
    known = tokens.estimate_text_tokens(" configuration")
    assert tokens.estimate_text_tokens(" CONFIGURATION") > known
    assert tokens.estimate_text_tokens(" xqzvbnmwlkjhg") > known


def test_a_repeated_known_word_is_spared_every_time() -> None:
    """Known words are looked up with their multiplicity: n copies cost n times one."""
    one = tokens._text_cost(" configuration")
    assert tokens._text_cost(" configuration" * 7) == pytest.approx(7 * one)


def test_the_estimate_rounds_up_and_counts_non_empty_text_as_one_at_least() -> None:
    """estimate_text_tokens is the cost rounded up, 0 for "" and at least 1 otherwise."""
    assert tokens.estimate_text_tokens("") == 0
    assert tokens.estimate_text_tokens(".") == 1
    text = "Two sentences, 42 numbers. And tabs\there."
    assert tokens.estimate_text_tokens(text) == math.ceil(tokens._text_cost(text))


@settings(max_examples=300)
@given(estimate_texts())
@example("configuration, 1construction2 and “reconstruction” 12345678 parse_tables")
@example("")
@example("abcdefg")
def test_the_long_words_are_the_words_that_may_be_known(text: str) -> None:
    """The regex that finds the words to look up finds exactly the split's words of an
    ASCII letter and six lower-case letters or more, in order, each with one space before
    it."""
    encoded = text.encode("utf-8", "surrogatepass")
    expected = [b" " + word for word in tokens._words(encoded) if tokens._may_be_known(word)]
    assert tokens._long_words(encoded) == expected


@pytest.mark.parametrize(
    ("word", "may_be_known"),
    [
        (b"example", True),
        (b"Example", True),
        (b"Construction", True),
        (b"exampl", False),
        (b"EXAMPLE", False),
        (b"eXample", False),
        (b"parse_tables", False),
        (b"caf\xc3\xa9ine", False),
    ],
)
def test_a_word_may_be_known_only_when_it_is_a_letter_and_six_lower_case_letters_or_more(
    word: bytes, may_be_known: bool
) -> None:
    assert tokens._may_be_known(word) is may_be_known


def test_every_known_word_is_one_the_lookup_finds() -> None:
    """What lets the fast path look up only such words: each known word (with its leading
    space) is found whole by the pattern, alone and between other words."""
    known = tokens._estimate_tables().known
    for key in known:
        assert tokens._may_be_known(key[1:]), key
    sample = b" ".join(key[1:] for key in list(known)[:500])
    assert tokens._long_words(sample) == [b" " + key[1:] for key in list(known)[:500]]


def test_every_known_word_is_seven_bytes_long_at_least() -> None:
    """What lets the fast path look up only the long words: no shorter word is known."""
    known = tokens._estimate_tables().known
    assert min(map(len, known)) >= len(b" ") + 7
    assert all(word.startswith(b" ") for word in known)
    assert len(known) == len(tokens._known_word_chunks())
