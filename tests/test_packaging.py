"""The installed distribution: one top-level import name, `beamcrawl`, with its conf data."""

import os
import shutil
import subprocess
import sys
import zipfile

import pytest

from tests.conftest import ROOT


@pytest.mark.slow
def test_wheel_installs_only_the_beamcrawl_name(tmp_path):
    source = tmp_path / 'src'              # a copy: building leaves build/ in the source tree
    for folder in ('pipelines', 'transforms', 'conf'):
        shutil.copytree(os.path.join(ROOT, folder), source / folder,
                        ignore=shutil.ignore_patterns('__pycache__'))
    shutil.copy(os.path.join(ROOT, 'setup.py'), source)
    subprocess.run([sys.executable, '-m', 'pip', 'wheel', '--no-deps', '-q', '-w',
                    str(tmp_path / 'dist'), str(source)], check=True, capture_output=True)
    (wheel,) = os.listdir(tmp_path / 'dist')
    with zipfile.ZipFile(tmp_path / 'dist' / wheel) as z:
        names = z.namelist()
        (top_level,) = [n for n in names if n.endswith('.dist-info/top_level.txt')]
        assert z.read(top_level).decode().split() == ['beamcrawl']
        entry_points = z.read(top_level.replace('top_level.txt', 'entry_points.txt')).decode()
    roots = {n.split('/', 1)[0] for n in names if not n.split('/', 1)[0].endswith('.dist-info')}
    assert roots == {'beamcrawl'}
    for folder in ('pipelines', 'transforms', 'conf'):      # every module and conf file
        for directory, _, files in os.walk(os.path.join(ROOT, folder)):
            for name in files:
                if name.endswith(('.py', '.yaml', '.txt', '.xml', '.java')):
                    relative = os.path.relpath(os.path.join(directory, name), ROOT)
                    assert f'beamcrawl/{relative}' in names
    assert 'beamcrawl = beamcrawl.pipelines.cli:entry' in entry_points


def test_every_command_module_runs_with_python_m():
    proc = subprocess.run([sys.executable, '-m', 'beamcrawl.pipelines.readdb', '--help'],
                          capture_output=True, text=True, cwd='/')
    assert proc.returncode == 0 and 'beamcrawl readdb' in proc.stdout


def _declared_floor():
    """(major, minor) of setup.py's python_requires."""
    import re
    with open(os.path.join(ROOT, 'setup.py'), encoding='utf-8') as f:
        found = re.search(r"python_requires='>=(\d+)\.(\d+)'", f.read())
    return int(found.group(1)), int(found.group(2))


def test_the_declared_python_floor_holds():
    """setup.py's floor is a version the code runs on: the suite runs on it or above (CI's
    python3 is the floor itself), and the code uses what that version has (re._parser,
    re._constants: 3.11)."""
    floor = _declared_floor()
    assert floor == (3, 11)
    assert sys.version_info[:2] >= floor
    import re
    assert hasattr(re, '_parser') and hasattr(re, '_constants')


def test_an_older_python_is_refused_at_install_with_a_clear_message():
    import glob
    floor = _declared_floor()
    name = f'python{floor[0]}.{floor[1] - 1}'
    candidates = [shutil.which(name)] + sorted(glob.glob(os.path.expanduser(
        f'~/.pyenv/versions/{floor[0]}.{floor[1] - 1}.*/bin/{name}')))
    working = [c for c in candidates if c and subprocess.run(
        [c, '-c', 'import pip'], capture_output=True).returncode == 0]
    if not working:
        pytest.skip(f'no {name} with pip on this machine')
    older = working[0]
    proc = subprocess.run([older, '-m', 'pip', 'install', '--no-deps', '--dry-run',
                           '--no-build-isolation', '--no-index', ROOT],
                          capture_output=True, text=True)
    assert proc.returncode != 0
    assert 'requires a different Python' in proc.stderr
    assert f"not in '>={floor[0]}.{floor[1]}'" in proc.stderr
