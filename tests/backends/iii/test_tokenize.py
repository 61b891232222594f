"""The recall tokenizer, char for char with the worker's (spec §2.1, §6.1, §6.2)."""

from __future__ import annotations

import random
import time

import pytest
import regex
from hypothesis import given, settings, strategies as st

from keepgui.backends.iii.recall import query_tokens
from keepgui.backends.iii.textrules import rust_lower
from keepgui.backends.iii.tokenize import entity_tokens, is_cjk, is_word_char, tokenize

CJK_RANGES = ((0x3040, 0x30FF), (0x3400, 0x4DBF), (0x4E00, 0x9FFF), (0xAC00, 0xD7AF), (0xF900, 0xFAFF))


def reference_tokenize(text: str) -> list[str]:
    """§2.1 written out literally, one char at a time, from the Unicode properties."""
    tokens, run, prev = [], "", None
    for ch in text:
        # Numbers by the regex module's tables too: Python's unicodedata (Unicode 14 on 3.11) does not
        # know digits added since (U+11F50 KAWI DIGIT ZERO, Unicode 15), which the worker counts.
        word = bool(regex.match(r"[\p{Alphabetic}\p{Nd}\p{Nl}\p{No}]", ch))
        cjk = word and any(lo <= ord(ch) <= hi for lo, hi in CJK_RANGES)
        if cjk:
            if run:
                tokens.append(run)
                run = ""
            tokens.append(ch)
            if prev is not None:
                tokens.append(prev + ch)
            prev = ch
        elif word:
            run += rust_lower(ch)[0]  # a current Rust knows letters newer than Python 3.11 (tested below)
            prev = None
        else:
            if run:
                tokens.append(run)
                run = ""
            prev = None
    if run:
        tokens.append(run)
    return tokens


@pytest.mark.parametrize(
    "text, tokens",
    [
        ("Mike's blog-style", ["mike", "s", "blog", "style"]),
        ("Café rápido", ["café", "rápido"]),
        ("User PREFERS terse-answers!", ["user", "prefers", "terse", "answers"]),
        ("日本語", ["日", "本", "日本", "語", "本語"]),
        ("周二发布", ["周", "二", "周二", "发", "二发", "布", "发布"]),
        ("abc日本def", ["abc", "日", "本", "日本", "def"]),
        ("I like my tea", ["i", "like", "my", "tea"]),
        ("", []),
        ("  --  ", []),
        ("a a a", ["a", "a", "a"]),
    ],
)
def test_spec_vectors(text, tokens):
    assert tokenize(text) == tokens


def test_upstream_cjk_containment():
    assert "日本" in tokenize("日本語") and "本語" in tokenize("日本語")
    assert "周二" in tokenize("周二发布")


def test_no_stemming_no_stop_words_no_minimum_length():
    assert tokenize("publishes the a s") == ["publishes", "the", "a", "s"]


def test_devanagari_vowel_signs_are_word_chars_unlike_python_isalnum():
    # The vowel signs (Mc) are Unicode Alphabetic, so Rust keeps "किताब" whole;
    # str.isalnum() rejects them and would cut the word into consonants.
    word = "किताब"
    assert [ch.isalnum() for ch in word] == [True, False, True, False, True]
    assert tokenize(word) == [word]
    python_runs = "".join(ch if ch.isalnum() else " " for ch in word).split()
    assert python_runs == ["क", "त", "ब"]
    # The virama (U+094D, Mn) is not Alphabetic, in Rust as in the Unicode data,
    # so "हिन्दी" splits there and only there: vowel signs stay attached.
    assert tokenize("हिन्दी") == ["हिन", "दी"]
    assert not is_word_char("\u094d") and is_word_char("\u093f") and is_word_char("\u0940")


@pytest.mark.parametrize(
    "text, tokens",
    [
        ("İSTANBUL", ["istanbul"]),  # 'İ'.lower() is 'i' + U+0307; only the first char is kept
        ("ΟΔΟΣ ΣΑΣ", ["οδοσ", "σασ"]),  # per char: no final sigma
        ("Straße", ["straße"]),
        ("ǅemal", ["ǆemal"]),  # a titlecase digraph lowercases to one char
        ("x² ½ Ⅻ", ["x²", "½", "ⅻ"]),  # No and Nl are numeric
        ("１２３ｶﾀｶﾅ", ["１２３ｶﾀｶﾅ"]),  # fullwidth digits and halfwidth katakana are outside the CJK ranges
        ("cafe\u0301 ok", ["cafe", "ok"]),  # a combining acute (Mn, not Alphabetic) breaks the run
        ("naïve—résumé", ["naïve", "résumé"]),
    ],
)
def test_lowercase_first_char_and_numeric(text, tokens):
    assert tokenize(text) == tokens


@pytest.mark.parametrize(
    "text, tokens",
    [
        (
            "ひらがなカタカナ",
            ["ひ", "ら", "ひら", "が", "らが", "な", "がな", "カ", "なカ", "タ", "カタ", "カ", "タカ", "ナ", "カナ"],
        ),
        ("한국어", ["한", "국", "한국", "어", "국어"]),
        ("日本・語", ["日", "本", "日本", "語"]),  # U+30FB is in range but punctuation: it breaks the bigram
        ("ラーメン", ["ラ", "ー", "ラー", "メ", "ーメ", "ン", "メン"]),  # U+30FC is Lm, a word char
        ("日本。語", ["日", "本", "日本", "語"]),
        ("日a本", ["日", "a", "本"]),  # a non-CJK word char clears the remembered CJK char
        ("東京2024年", ["東", "京", "東京", "2024", "年"]),
        ("ＡＢＣ日本", ["ａｂｃ", "日", "本", "日本"]),
    ],
)
def test_cjk_unigrams_and_bigrams(text, tokens):
    assert tokenize(text) == tokens
    assert tokenize(text) == reference_tokenize(text)


def test_cjk_ranges():
    assert is_cjk("ぁ") and is_cjk("ヿ") and is_cjk("㐀") and is_cjk("一") and is_cjk("가") and is_cjk("豈")
    assert not is_cjk("ｶ") and not is_cjk("a") and not is_cjk("\u302f")


def test_entity_tokens_concatenate_each_entity():
    assert entity_tokens(("mike", "blog-post", "日本")) == ("mike", "blog", "post", "日", "本", "日本")
    assert entity_tokens(()) == ()


def test_pronoun_expansion():
    assert query_tokens("I like my tea") == ["i", "like", "my", "tea", "user"]
    assert query_tokens("tell me about it") == ["tell", "me", "about", "it", "user"]
    assert query_tokens("mine and myself") == ["mine", "and", "myself", "user"]
    assert query_tokens("is the user mine") == ["is", "the", "user", "mine"]
    assert query_tokens("what does Mike like") == ["what", "does", "mike", "like"]
    assert query_tokens("MY I me") == ["my", "i", "me", "user"]  # appended once
    assert query_tokens("") == []


_TEXT = st.text(
    alphabet=st.sampled_from(
        list("aZ09 -'é\u0301ß")
        + [
            "İ",
            "Σ",
            "ς",
            "日",
            "本",
            "語",
            "・",
            "ー",
            "ｶ",
            "한",
            "\u093f",
            "क",
            "\u094d",
            "²",
            "Ⅻ",
            "\t",
            "\u2028",
            "🙂",
            "\x1c",
            "Ǆ",
        ]
    ),
    max_size=40,
)


@settings(max_examples=400, deadline=None)
@given(_TEXT)
def test_fast_paths_equal_the_literal_algorithm(text):
    assert tokenize(text) == reference_tokenize(text)


@settings(max_examples=200, deadline=None)
@given(st.text(max_size=30))
def test_any_text_equals_the_literal_algorithm(text):
    assert tokenize(text) == reference_tokenize(text)


def test_hundred_thousand_memories_tokenize_fast():
    from tests.bench.synth import sentence

    rng = random.Random(3)
    texts = [sentence(rng, i) + " @mike" for i in range(100_000)]
    start = time.perf_counter()
    for text in texts:
        tokenize(text)
    assert time.perf_counter() - start < 2.0


# ---------------------------------------------------------------------- Unicode newer than Python's (#12.9)


def test_letters_newer_than_pythons_tables_lowercase_as_in_rust():
    """U+1C89 CYRILLIC CAPITAL LETTER TJE (Unicode 16) lowercases to U+1C8A in a current Rust;
    Python 3.11 (Unicode 14) leaves it. Tokens, ids and consolidation keys follow Rust."""
    from keepgui.backends.iii.compact import normalize
    from keepgui.backends.iii.record import fingerprint, normalize_labels

    upper, lower = "\u1c89", "\u1c8a"
    assert tokenize(f"ab{upper}cd") == [f"ab{lower}cd"]
    assert fingerprint(f"x{upper}y") == fingerprint(f"x{lower}y")
    assert normalize_labels([f" {upper}TAG "]) == [f"{lower}tag"]
    assert normalize(f"{upper} RAMS \ua7cb") == f"{lower} rams \u0264"  # A7CB lowercases to an old letter
    assert tokenize("Plain ASCII Stays") == ["plain", "ascii", "stays"]


def test_the_generated_lowercase_table_matches_the_regex_modules_tables():
    """Every entry is a case pair in regex's tables, and no character that regex lowercases
    (Changes_When_Lowercased) is missing from Python's str.lower and the table together."""
    import sys

    import regex

    from keepgui.backends.iii.unicode_lower import NEWER_LOWERCASE

    lowercase = regex.compile(r"\p{Ll}")
    for cp, low in NEWER_LOWERCASE.items():
        assert lowercase.match(low) and regex.fullmatch("(?i)" + regex.escape(low), chr(cp)), hex(cp)
    changes = regex.compile(r"\p{Changes_When_Lowercased}")
    missing = {
        cp
        for cp in range(sys.maxunicode + 1)
        if not 0xD800 <= cp <= 0xDFFF and changes.match(chr(cp)) and chr(cp).lower() == chr(cp)
    }
    assert missing == set(NEWER_LOWERCASE), "regenerate with tools/gen_unicode_lower.py"
