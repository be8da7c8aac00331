"""Rule files: Nutch's urlnormalizer-regex (regex-normalize.xml) and urlfilter-regex
(regex-urlfilter.txt), with Java regex syntax translated to Python's. Pure Python."""

import re
import xml.etree.ElementTree as ET
from typing import List, Optional, Sequence, Tuple

from beamcrawl.transforms.policy.domains import DomainHelper
from beamcrawl.transforms.policy.refast import guard, searcher, tail_searcher
from beamcrawl.transforms.policy.urlparts import host_of

__all__ = ['RuleError', 'RegexNormalizer', 'RegexFilter']


class RuleError(ValueError):
    """A rule file that cannot be read; the message names the file and line."""


def _java_regex(pattern: str) -> str:
    """Adapts the Java regex syntax used by Nutch rule files: `$1` in replacements is separate,
    here only an inline flag group placed after the start becomes a scoped group."""
    m = re.search(r'\(\?([imsx]+)\)', pattern)
    if m and m.start() > 0:
        return pattern[:m.start()] + f'(?{m.group(1)}:' + pattern[m.end():] + ')'
    return pattern


class RegexNormalizer:
    """Nutch's RegexURLNormalizer: ordered (pattern, substitution) rules, each replace-all."""

    def __init__(self, rules: Sequence[Tuple[str, str]] = (),
                 source: str = 'regex-normalize.xml'):
        self.rules = [(re.compile(_java_regex(p)), s) for p, s in rules]
        self.patterns = [p for p, _ in rules]
        self.source = source
        # A rule is substituted only where it matches (elsewhere its substitution gives the
        # URL itself): not where the URL lacks characters every match of it holds (refast
        # `guard`: Nutch's session-id rule needs a `=`), else where a search finds a match,
        # in the URL's tail for a rule anchored at the end (refast `tail_searcher`). A search
        # costs half a substitution that finds nothing; 7 substitutions per URL, or one search
        # of all the rules combined, cost more than all the rest of normalization.
        self._plan = [(regex, substitution, *(guard(regex) or (None, 0)),
                       tail_searcher(regex) or regex.search)
                      for regex, substitution in self.rules]

    @classmethod
    def parse(cls, text: str, source: str = 'regex-normalize.xml') -> 'RegexNormalizer':
        """Reads Nutch's XML format: <regex-normalize><regex><pattern/><substitution/></regex>."""
        try:
            root = ET.fromstring(text)
        except ET.ParseError as e:
            raise RuleError(f'{source}: not valid XML ({e})') from None
        rules = []
        for i, node in enumerate(root.iter('regex'), 1):
            pattern = node.findtext('pattern')
            if pattern is None:
                raise RuleError(f'{source}: rule {i} has no <pattern>')
            substitution = re.sub(r'\$(\d)', r'\\g<\1>', node.findtext('substitution') or '')
            try:
                re.compile(_java_regex(pattern))
            except re.error as e:
                raise RuleError(f'{source}: rule {i}: bad pattern {pattern!r} ({e})') from None
            rules.append((pattern, substitution))
        return cls(rules, source)

    def __call__(self, url: str) -> str:
        for regex, substitution, char, count, search in self._plan:
            if char is not None and url.count(char) < count:
                continue
            if search(url):          # a match, or a tail searcher's True
                url = regex.sub(substitution, url)
        return url

    def explain(self, url: str) -> Tuple[str, List[str]]:
        """(the URL normalized, the rules that changed it: `file rule N (pattern)`), for
        normalizerchecker; the same substitutions as calling it."""
        changed = []
        for n, ((regex, substitution), pattern) in enumerate(zip(self.rules, self.patterns), 1):
            after = regex.sub(substitution, url)
            if after != url:
                changed.append(f'{self.source} rule {n} ({pattern})')
            url = after
        return url, changed


def _search_pattern(pattern: str) -> str:
    """A rule regex for `search`: a leading `.*` (or `.*?`) only lets the match start earlier,
    which search does anyway (URLs hold no newline), but it makes Python's engine backtrack over
    every start position: Nutch's loop rule costs 12 µs per URL with it and 0.5 µs without."""
    if pattern.startswith('.*?'):
        return pattern[3:]
    if pattern.startswith('.*') and not pattern.startswith(('.*+', '.**')):
        return pattern[2:]
    return pattern


class RegexFilter:
    """Nutch's RegexURLFilter: the first rule whose regex is found in the URL decides (`+`
    accepts, `-` rejects); no matching rule rejects. `> host` ... `<` blocks hold rules that
    apply only to URLs of that host or registered domain."""

    def __init__(self, rules: Sequence[Tuple[bool, str, Optional[str]]], domains: DomainHelper,
                 source: str = 'regex-urlfilter.txt', lines: Sequence[int] = ()):
        self.rules = [(sign, searcher(re.compile(_search_pattern(_java_regex(p)))), scope)
                      for sign, p, scope in rules]
        self.domains = domains
        # Without `>` blocks, the first rule that matches decides: searched in a plain loop.
        self._searches = (None if any(scope is not None for _, _, scope in self.rules)
                          else [search for _, search, _ in self.rules])
        # What filterchecker names as the rule that decided: `file:line: +pattern`.
        self.texts = [f'{source}:{line}: ' if line else f'{source}: '
                      for line in (list(lines) or [0] * len(rules))]
        self.texts = [f'{where}{"+" if sign else "-"}{p}' + (f' (in > {scope})' if scope else '')
                      for where, (sign, p, scope) in zip(self.texts, rules)]

    @classmethod
    def parse(cls, text: str, domains: DomainHelper,
              source: str = 'regex-urlfilter.txt') -> 'RegexFilter':
        rules, lines = [], []
        scope = None
        for lineno, line in enumerate(text.splitlines(), 1):
            if not line or line[0] in '# \t':
                continue
            line = line.rstrip()
            first, body = line[0], line[1:]
            if first == '>':
                scope = body.strip().lower()
                if not scope:
                    raise RuleError(f'{source}:{lineno}: `>` needs a host or domain')
                continue
            if first == '<':
                scope = None
                continue
            if first not in '+-':
                raise RuleError(f'{source}:{lineno}: a rule starts with + or -, not {first!r}')
            try:
                re.compile(_java_regex(body))
            except re.error as e:
                raise RuleError(f'{source}:{lineno}: bad regex {body!r} ({e})') from None
            rules.append((first == '+', body, scope))
            lines.append(lineno)
        return cls(rules, domains, source, lines)

    def __call__(self, url: str) -> bool:
        n = self._deciding(url)
        return n is not None and self.rules[n][0]

    def explain(self, url: str) -> Tuple[bool, str]:
        """(accepted, the rule that decided: `file:line: +pattern`, or that none matched)."""
        n = self._deciding(url)
        if n is None:
            return False, 'no rule matched (a URL no rule accepts is rejected)'
        return self.rules[n][0], self.texts[n]

    def _deciding(self, url: str) -> Optional[int]:
        """The index of the first rule that applies to the URL and matches it, or None."""
        if self._searches is not None:
            n = 0
            for search in self._searches:
                if search(url):
                    return n
                n += 1
            return None
        host = domain = None
        for n, (_, regex, scope) in enumerate(self.rules):
            if scope is not None:
                if host is None:
                    host = host_of(url)
                    domain = self.domains.domain(host)
                if scope != host and scope != domain:
                    continue
            if regex(url):
                return n
        return None
