"""Faster searches for the URL filter's regexes, from the structure of Python's own regex parser
(re._parser, re._constants: Python 3.11+). A filter rule is searched in every URL; most rules
are anchored at the end (`[.](gif|jpg)$`) or start with any character, and searching only the
tail of the URL, or matching from its start, gives the same answer in a fraction of the time.
A rule whose every match holds some punctuation character several times (Nutch's loop rule
`.*(/[^/]+)/[^/]+\1/[^/]+\1/`: six slashes) is not searched in a URL that holds fewer
(docs/performance.md). Pure Python."""

import re
from typing import Optional, Tuple

__all__ = ['searcher', 'guard', 'tail_searcher']


# Tails whose answer a _TailSearch remembers (per process): URLs end in few ways.
_TAILS_REMEMBERED = 65536


class _TailSearch:
    """Whether `regex.search` finds a rule anchored at the end whose matches are at most `width`
    long: only the URL's last `width` characters can hold a match, so only they are searched
    (Nutch's suffix rule costs 0.7 µs per URL searched whole, 0.15 µs this way), and since the
    answer depends on them alone it is remembered per tail (`.html` ends most URLs: 0.54 µs a
    URL searched, about 0.15 µs remembered)."""

    def __init__(self, regex, width):
        self.regex, self.width = regex, width
        self._answers = {}

    def __call__(self, url):
        # one more character: `$` also matches before a final newline
        tail = url[-self.width - 1:] if len(url) > self.width else url
        answers = self._answers
        found = answers.get(tail)
        if found is None:
            if len(answers) >= _TAILS_REMEMBERED:
                answers.clear()
            found = answers[tail] = self.regex.search(tail) is not None
        return found

    def __getstate__(self):
        return {'regex': self.regex, 'width': self.width, '_answers': {}}


class _AnyChar:
    """`regex.search` for the rule `.` (accept the rest): found in any URL with a character
    other than a newline, without making a match object."""

    def __init__(self, regex):
        self.regex = regex

    def __call__(self, url):
        return bool(url) and (url[0] != '\n' or self.regex.search(url) is not None)


class _Counted:
    """`search` for a rule whose matches all hold at least `count` times the character `char`:
    a URL holding it fewer times cannot hold a match, and counting is cheaper than searching
    (the loop rule: 1.1 µs per URL searched, 0.06 µs counted)."""

    def __init__(self, search, char, count):
        self.search, self.char, self.count = search, char, count

    def __call__(self, url):
        if url.count(self.char) < self.count:
            return None
        return self.search(url)


def searcher(regex):
    """A callable whose answer is as true as regex.search's (found or not) for a filter rule,
    faster for three usual shapes."""
    if regex.pattern == '.' and not regex.flags & (re.S | re.M):
        return _AnyChar(regex)
    width = _tail_width(regex)
    search = _TailSearch(regex, width) if width is not None else regex.search
    required = _required_counts(regex)
    if required:
        char, count = max(required.items(), key=lambda item: (item[1], item[0]))
        if count >= 2:          # one `/` or `.` is in nearly every URL: not worth counting
            return _Counted(search, char, count)
    return search


# Characters that nearly every http URL holds once or more (`http://host/`: three slashes).
_COMMON = {'/': 3, '.': 1, ':': 1}


def guard(regex) -> Optional[Tuple[str, int]]:
    """(character, count): every match of the regex holds the character at least `count`
    times, so a URL holding it fewer times has none; the requirement least often met by URLs,
    or None when each is met by nearly every URL (_COMMON) or there is none."""
    worth = [(count, char) for char, count in _required_counts(regex).items()
             if count > _COMMON.get(char, 0)]
    if not worth:
        return None
    # a character that is not common at all first, then the larger count
    count, char = max(worth, key=lambda item: (item[1] not in _COMMON, item[0], item[1]))
    return char, count


def tail_searcher(regex):
    """`regex.search` in the URL's tail (_TailSearch) for a rule anchored at the end whose
    matches are short, else None."""
    width = _tail_width(regex)
    return _TailSearch(regex, width) if width is not None else None


def _required_counts(regex) -> dict:
    """{character: the least number of times every match of the pattern holds it}, for ASCII
    characters that are neither letters nor digits (no case-insensitive match can stand for
    them); {} when the pattern cannot be parsed here."""
    from re import _constants as c  # the standard parser of re (Python ≥ 3.11)
    from re import _parser
    try:
        tree = _parser.parse(regex.pattern, regex.flags)
    except Exception:  # pylint: disable=broad-except  (any doubt: no requirement)
        return {}
    groups = {}

    def plus(a, b, times=1):
        out = dict(a)
        for ch, n in b.items():
            out[ch] = out.get(ch, 0) + n * times
        return out

    def sequence(items) -> dict:
        total = {}
        for op, arg in items:
            total = plus(total, node(op, arg))
        return total

    def node(op, arg) -> dict:
        if op is c.LITERAL:
            ch = chr(arg)
            return {ch: 1} if ch.isascii() and not ch.isalnum() else {}
        if op is c.SUBPATTERN:
            counts = sequence(arg[3])
            if arg[0] is not None:
                groups[arg[0]] = counts
            return counts
        if op in (c.MAX_REPEAT, c.MIN_REPEAT, c.POSSESSIVE_REPEAT):
            low, _, sub = arg
            return plus({}, sequence(sub), low) if low else {}
        if op is c.ATOMIC_GROUP:
            return sequence(arg)
        if op is c.BRANCH:
            alternatives = [sequence(alt) for alt in arg[1]]
            return {ch: min(alt.get(ch, 0) for alt in alternatives)
                    for ch in alternatives[0] if all(ch in alt for alt in alternatives)}
        if op is c.GROUPREF:    # the group matched before, so the same text is here again
            return dict(groups.get(arg, {}))
        return {}               # classes, any, anchors, lookarounds: nothing certain

    return {ch: n for ch, n in sequence(list(tree)).items() if n > 0}


def _tail_width(regex) -> Optional[int]:
    """The longest possible match of a pattern that ends with `$` and has no other anchor,
    lookaround or back-reference (so a match is decided by the URL's tail alone); None
    otherwise."""
    if not regex.pattern.endswith('$') or regex.pattern.endswith('\\$') or regex.flags & re.M:
        return None
    from re import _constants as c  # the standard parser of re (Python ≥ 3.11)
    from re import _parser
    try:
        tree = _parser.parse(regex.pattern, regex.flags)
    except Exception:  # pylint: disable=broad-except  (any doubt: search whole)
        return None
    refused = {c.ASSERT, c.ASSERT_NOT, c.GROUPREF, c.GROUPREF_EXISTS, c.AT}

    def clean(items) -> bool:
        for op, arg in items:
            if op in refused:
                return False
            for sub in (arg if isinstance(arg, (list, tuple)) else (arg,)):
                if isinstance(sub, _parser.SubPattern) and not clean(sub):
                    return False
                if isinstance(sub, (list, tuple)):
                    for x in sub:
                        if isinstance(x, _parser.SubPattern) and not clean(x):
                            return False
        return True

    items = list(tree)
    if not items or items[-1] != (c.AT, c.AT_END) or not clean(items[:-1]):
        return None
    low, high = tree.getwidth()
    return high if 0 < high < 1000 else None
