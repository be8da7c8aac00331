"""docs/architecture.md matches the code: every file, folder, class, function, command and config
key it names in backticks exists."""

import os
import re

import pytest

from beamcrawl.pipelines.cli import ALIASES, COMMANDS
from beamcrawl.transforms.base.config import load_specs
from tests.conftest import ROOT

pytestmark = pytest.mark.unit

DOC = os.path.join(ROOT, 'docs', 'architecture.md')
# Names of Beam and of Nutch that the page names in passing: not ours to define.
OUTSIDE = {'DirectRunner', 'FnApiRunner', 'WriteToAvro', 'GroupByKey', 'finish_bundle', 'setup',
           'process', 'in_memory', 'multi_processing', 'current', 'crawl_fetch', 'crawl_parse',
           'crawl_generate', 'parse_data', 'fetch.start', 'fetch.end', 'bin/crawl',
           'part-NNNNN.avro'}


def _code_names():
    """Every name defined in the code (classes, functions, assignments at any level)."""
    names = set()
    pattern = re.compile(r'^[ \t]*(?:class|def)[ \t]+(\w+)'
                         r'|^[ \t]*(\w+)[ \t]*(?::[^=\n]*)?=', re.M)
    for top in ('pipelines', 'transforms'):
        for directory, _, files in os.walk(os.path.join(ROOT, top)):
            for name in files:
                if name.endswith('.py'):
                    with open(os.path.join(directory, name), encoding='utf-8') as f:
                        for match in pattern.finditer(f.read()):
                            names.add(match.group(1) or match.group(2))
    return names


def _spans():
    with open(DOC, encoding='utf-8') as f:
        text = f.read()
    text = re.sub(r'```.*?```', '', text, flags=re.S)      # the drawings name folders loosely
    return sorted(set(re.findall(r'`([^`\n]+)`', text)))


def _problem(span, code, keys):
    """Why `span` names nothing that exists, or None."""
    if span.startswith('beamcrawl '):
        command = span.split()[1]
        return None if command in COMMANDS or command in ALIASES else 'no such command'
    if span.startswith('-') or ' ' in span or '<' in span or span in OUTSIDE:
        return None
    if '/' in span:
        path = span.rstrip('/')
        for base in (ROOT, os.path.join(ROOT, 'transforms'), os.path.join(ROOT, 'transforms',
                                                                           'fetcher')):
            if os.path.exists(os.path.join(base, path)):
                return None
        return 'no such file or folder'
    if re.fullmatch(r'[a-z0-9_]+(\.[a-z0-9_]+)+', span) and span in keys:
        return None
    name = span.rstrip('()').split('.')[-1]
    if span.endswith('.py') or span.endswith('.md'):
        return None if any(
            os.path.exists(os.path.join(d, span)) for d, _, _ in os.walk(ROOT)
            if '.venv' not in d and '.git' not in d) else 'no such file'
    return None if name in code else 'not defined in the code'


def test_every_name_the_architecture_page_gives_exists():
    code, keys = _code_names(), set(load_specs())
    problems = [f'`{span}`: {why}' for span in _spans()
                for why in [_problem(span, code, keys)] if why]
    assert not problems, '\n'.join(problems)


def test_the_check_finds_a_name_that_does_not_exist():
    code, keys = _code_names(), set(load_specs())
    assert _problem('NoSuchTransform', code, keys) == 'not defined in the code'
    assert _problem('transforms/nothing.py', code, keys) == 'no such file or folder'
    assert _problem('beamcrawl frobnicate', code, keys) == 'no such command'
    assert _problem('UpdateCrawlDb', code, keys) is None
