"""The `beamcrawl` program's start-up: the cyclic garbage collector is off while it imports.

Importing Beam and beamcrawl makes about half a million objects, most of them containers that
live as long as the process; with the collector on, they set off dozens of collections that find
nothing to free: 0.08-0.10 s of the 0.7 s before a command's first step (docs/performance.md,
"Start-up"). `begin()` turns the collector off at the program's start; `end()` turns it back on
when the command's main() returns (pipelines/cli.py `entry`), so a command runs with it off
throughout (turned back on when the first pipeline is built, generate's 1M-URL command took
0.4-0.5 s longer, side by side, and the other stages the same). What exists then (modules,
classes, settings) is moved out of the collector's sight (gc.freeze).

A process that did not call begin() (a library user's, the tests') is left alone.

`defer_beartype()` puts off importing beartype, which Beam's type hints import at their top
for one check that no beamcrawl pipeline reaches (0.04-0.05 s of every command's start);
`defer_module()` puts off importing a module that is imported whole and used only through its
attributes, later (httplib2, for Beam's staging of files to a cluster).
"""

import gc
import importlib.util
import sys
import types

__all__ = ['begin', 'end', 'defer_beartype', 'defer_module']

_state = {'begun': False}


def begin() -> None:
    """Turns the cyclic collector off until end(), if it is on."""
    if gc.isenabled():
        gc.disable()
        _state['begun'] = True


def end() -> None:
    """Freezes what the start-up made and turns the collector back on (once; after begin())."""
    if _state['begun']:
        _state['begun'] = False
        gc.freeze()
        gc.enable()


# Beam's type hints (apache_beam/typehints/typehints.py) import `is_subhint` from beartype.door
# and `BeartypeDoorException` from beartype.roar, and call is_subhint only in
# is_consistent_with, for two hints that are neither Beam's type constraints nor typing's
# generics. Importing the beartype package runs its decorator machinery (about 300 modules).
# defer_beartype() puts a stand-in package in its place, through which its submodules still
# import as themselves (beartype.roar is the real one, with the real exception classes), and a
# stand-in beartype.door whose is_subhint imports the real package on its first call.

def defer_beartype() -> None:
    """Defers beartype's import until Beam first calls is_subhint or someone reads an attribute
    of the package (before Beam is imported; once)."""
    if 'beartype' in sys.modules or 'apache_beam' in sys.modules:
        return
    spec = importlib.util.find_spec('beartype')
    if spec is None or not spec.submodule_search_locations:
        return
    package = types.ModuleType('beartype', 'A stand-in until beartype is used (startup.py).')
    package.__path__ = list(spec.submodule_search_locations)
    package.__getattr__ = lambda name: _attribute(_real_beartype, name)
    door = types.ModuleType('beartype.door', 'A stand-in until is_subhint is called.')
    door.is_subhint = lambda sub, base: _real_beartype().door.is_subhint(sub, base)
    door.__getattr__ = lambda name: _attribute(lambda: _real_beartype().door, name)
    package.door = door
    _stand_ins[:] = [package, door]
    sys.modules['beartype'], sys.modules['beartype.door'] = package, door


_stand_ins: list = []


def _attribute(real, name: str):
    """An attribute of the real module (`real()` imports it), except a module's own dunder
    attributes (__file__...), which the import system and others probe on any module."""
    if name.startswith('__') and name.endswith('__'):
        raise AttributeError(name)
    return getattr(real(), name)


def _real_beartype() -> types.ModuleType:
    """The real beartype package (with beartype.door), imported in the stand-ins' place; the
    submodules imported through the stand-in are kept, and named on the real package."""
    if _stand_ins:
        for name, stand_in in zip(('beartype', 'beartype.door'), _stand_ins):
            if sys.modules.get(name) is stand_in:
                del sys.modules[name]
        _stand_ins.clear()
        importlib.import_module('beartype.door')
        package = sys.modules['beartype']
        for name, module in list(sys.modules.items()):
            parent, _, child = name.rpartition('.')
            if parent == 'beartype' and module is not None and not hasattr(package, child):
                setattr(package, child, module)
    return sys.modules['beartype']


def defer_module(name: str) -> None:
    """Puts a stand-in for the top-level module `name` in sys.modules (before anything imports
    it; once): the real module is imported when an attribute of it is first read, and the
    stand-in then forwards to it. For a module that its importers import whole (`import
    name`) and use in their functions only; `from name import x` would import it at once."""
    if name in sys.modules or '.' in name:
        return
    spec = importlib.util.find_spec(name)
    if spec is None:
        return
    stand_in = types.ModuleType(name, f'A stand-in until {name} is used (startup.py).')
    stand_in.__getattr__ = lambda attribute: _attribute(lambda: _real_module(name, stand_in),
                                                        attribute)
    sys.modules[name] = stand_in


def _real_module(name: str, stand_in: types.ModuleType) -> types.ModuleType:
    """The real module in a stand-in's place (imported on the first call)."""
    if sys.modules.get(name) is stand_in:
        del sys.modules[name]
        importlib.import_module(name)
    return sys.modules[name]
