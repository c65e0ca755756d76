"""The lexical query a text becomes (core.memory): what is about something, not who is asked."""

from __future__ import annotations

import pytest

from openbot.core.errors import InvalidArgument
from openbot.core.memory import MAX_TERMS, check_content, check_importance, fts5_query, query_terms, tsquery


def test_terms_drop_mentions_stop_words_one_letter_words_and_repeats() -> None:
    text = "@engineer How do we DEPLOY the payments-service? Deploy it on Friday, @qa_bot; x"
    assert query_terms(text) == ("deploy", "payments", "service", "friday")
    assert query_terms("@engineer ?!") == ()


def test_terms_are_capped_and_quoted_so_no_word_is_syntax() -> None:
    many = " ".join(f"word{i}" for i in range(100))
    assert len(query_terms(many)) == MAX_TERMS
    terms = query_terms('NEAR(alpha beta) "quoted" OR AND not* col:umn')
    assert terms == ("near", "alpha", "beta", "quoted", "col", "umn")
    assert fts5_query(terms) == '"near" OR "alpha" OR "beta" OR "quoted" OR "col" OR "umn"'
    assert tsquery(("deploy", "friday")) == "deploy | friday"


@pytest.mark.parametrize("content", ["", "   \n\t"])
def test_empty_content_is_refused(content: str) -> None:
    with pytest.raises(InvalidArgument):
        check_content(content)


def test_importance_must_be_between_zero_and_one() -> None:
    assert check_importance(0) == 0.0 and check_importance(1) == 1.0
    for bad in (-0.01, 1.01, float("nan")):
        with pytest.raises(InvalidArgument):
            check_importance(bad)
