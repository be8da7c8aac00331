"""The import graph follows the layers of docs/architecture.md: no module imports a module of a
higher layer, command modules reach the engine and the fetcher only through their stage's
module, and no modules import each other in a cycle (imports inside functions count too)."""

import ast
import os

import pytest

from tests.conftest import ROOT

pytestmark = pytest.mark.unit

# Lowest first: a module may import its own layer and the layers below it.
LAYERS = [
    ('base', ['transforms/base/']),
    ('records', ['transforms/storage/records.py', 'transforms/storage/datumcodec.py',
                 'transforms/storage/native.py']),
    ('policy', ['transforms/policy/']),
    ('storage', ['transforms/storage/']),
    ('runners', ['transforms/runners/']),
    ('engine', ['transforms/engine/']),
    ('fetcher', ['transforms/fetcher/']),
    ('stages', ['transforms/']),
    ('settings', ['transforms/settings.py']),
    ('testing', ['transforms/testing/']),
    ('commands', ['pipelines/', 'transforms/workerpool.py']),
]
# What the command modules may not import: the stages' insides.
HIDDEN_FROM_COMMANDS = ('transforms/engine/', 'transforms/fetcher/')


def _layer(path: str) -> int:
    """The layer of a source file: the most specific prefix that names it."""
    best, best_len = None, -1
    for index, (_, prefixes) in enumerate(LAYERS):
        for prefix in prefixes:
            if path.startswith(prefix) and len(prefix) > best_len:
                best, best_len = index, len(prefix)
    assert best is not None, f'{path}: in no layer of LAYERS'
    return best


def _modules():
    """{source path: module name} of every module of the package."""
    found = {}
    for top in ('pipelines', 'transforms'):
        for directory, _, files in os.walk(os.path.join(ROOT, top)):
            for name in files:
                if name.endswith('.py'):
                    path = os.path.relpath(os.path.join(directory, name), ROOT)
                    module = path[:-3].replace(os.sep, '.')
                    if module.endswith('.__init__'):
                        module = module[:-len('.__init__')]
                    found[path] = 'beamcrawl.' + module
    return found


def _graph():
    """{source path: {imported source path: line}} over the package's own modules."""
    modules = _modules()
    by_name = {name: path for path, name in modules.items()}
    graph = {}
    for path in modules:
        with open(os.path.join(ROOT, path), encoding='utf-8') as f:
            tree = ast.parse(f.read(), path)
        edges = {}
        for node in ast.walk(tree):
            names = []
            if isinstance(node, ast.Import):
                names = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                names = [f'{node.module}.{alias.name}' for alias in node.names] + [node.module]
            for name in names:
                while name and name not in by_name:
                    name = name.rpartition('.')[0]
                target = by_name.get(name)
                if target is not None and target != path and not target.endswith('__init__.py'):
                    edges.setdefault(target, node.lineno)
        graph[path] = edges
    return graph


def test_every_module_is_in_a_layer():
    for path in _modules():
        _layer(path)


def test_no_module_imports_a_higher_layer():
    upward = [f'{path}:{line} imports {target} ({LAYERS[_layer(target)][0]} above '
              f'{LAYERS[_layer(path)][0]})'
              for path, edges in _graph().items() for target, line in edges.items()
              if _layer(target) > _layer(path)]
    assert not upward, '\n'.join(upward)


def test_commands_reach_the_engine_and_the_fetcher_through_their_stages():
    crossing = [f'{path}:{line} imports {target}'
                for path, edges in _graph().items() if path.startswith('pipelines/')
                for target, line in edges.items() if target.startswith(HIDDEN_FROM_COMMANDS)]
    assert not crossing, '\n'.join(crossing)


def test_no_import_cycles():
    graph = _graph()
    index, low, stack, on_stack, cycles = {}, {}, [], set(), []

    def visit(node):
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for target in graph.get(node, {}):
            if target not in index:
                visit(target)
                low[node] = min(low[node], low[target])
            elif target in on_stack:
                low[node] = min(low[node], index[target])
        if low[node] == index[node]:
            component = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                component.append(member)
                if member == node:
                    break
            if len(component) > 1:
                cycles.append(sorted(component))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    assert not cycles, f'import cycles: {cycles}'


def test_the_layers_catch_an_upward_import(tmp_path):
    """The check itself: a storage module importing a stage would be reported."""
    assert _layer('transforms/storage/layout.py') < _layer('transforms/inject.py')
    assert _layer('transforms/storage/records.py') < _layer('transforms/policy/urls.py') < \
        _layer('transforms/storage/fs.py') < _layer('transforms/engine/units.py')
