"""Language detection (policy/language.py) on short (20-60 characters) and long (500+) texts in
15 languages, on pages with menu words of another language, and on texts with no language."""

import pytest

from beamcrawl.transforms.policy import language
from tests.language_texts import LONG, MIXED, SHORT


def test_fifteen_languages_short_and_long():
    assert len(SHORT) == len(LONG) == 15
    short = [(code, language.detect(text)) for code, texts in SHORT.items() for text in texts]
    right = sum(found == code for code, (found, _) in short)
    assert right / len(short) >= 0.95, [(c, f) for c, (f, _) in short if f != c]
    for code, texts in LONG.items():
        for text in texts:
            found, confidence = language.detect(text)
            assert found == code and confidence >= 0.5, (code, found, confidence, text[:40])


def test_pages_with_words_of_another_language():
    for text, code, _ in MIXED:
        assert language.detect(text)[0] == code, text[:60]


@pytest.mark.parametrize('text', ['', None, '   ', '12345 678 90', 'OK', 'a.b c-d e_f'])
def test_no_language_without_letters(text):
    assert language.detect(text) == ('', 0.0)


def test_confidence_is_lower_on_noise():
    assert language.detect('https://example.com/path/to/page?id=42&lang=x')[1] < 0.9
    found, confidence = language.detect(LONG['de'][0])
    assert found == 'de' and 0.9 <= confidence <= 1.0
