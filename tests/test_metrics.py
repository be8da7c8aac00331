"""Counter names: every one is declared in transforms/base/metrics.py, and code spells none
itself."""

import ast
import os

from beamcrawl.transforms.base import metrics
from tests.conftest import ROOT

_COUNTING = {'counter', 'inc', '_count'}     # metrics.counter(name), BundleCounts.inc(name), ...


def _sources():
    for folder in ('transforms', 'pipelines'):
        for directory, _, names in os.walk(os.path.join(ROOT, folder)):
            for name in names:
                if name.endswith('.py') and name != 'metrics.py':
                    yield os.path.join(directory, name)


def _spelled_names(path):
    """Counter calls whose name argument is a literal string (plain or f-string)."""
    with open(path, encoding='utf-8') as f:
        tree = ast.parse(f.read(), path)
    for node in ast.walk(tree):
        if not (isinstance(node, ast.Call) and node.args):
            continue
        func = node.func
        name = func.attr if isinstance(func, ast.Attribute) else getattr(func, 'id', '')
        first = node.args[0]
        literal = isinstance(first, ast.JoinedStr) or (
            isinstance(first, ast.Constant) and isinstance(first.value, str))
        if name in _COUNTING and literal:
            yield f'{os.path.relpath(path, ROOT)}:{node.lineno}'


def test_no_counter_name_is_spelled_outside_metrics():
    spelled = [where for path in _sources() for where in _spelled_names(path)]
    assert spelled == [], 'use a name from transforms/base/metrics.py: ' + ', '.join(spelled)


def test_declared_names_are_unique_and_namespaced():
    names = [v for k, v in vars(metrics).items() if k.isupper() and isinstance(v, str)
             and k != 'NAMESPACE']
    assert len(names) == len(set(names))
    stages = {'inject', 'generate', 'fetch', 'parse', 'updatedb', 'crawldb', 'linkdb', 'index',
              'dedup', 'sitemap', 'store', 'import', 'merge', 'hostdb', 'webgraph', 'linkrank',
              'scoreupdater'}
    assert all(n.split('.', 1)[0] in stages for n in names), names
