"""The installed distribution: one top-level import name, `beamcrawl`, with its conf data."""

import os
import subprocess
import sys
import zipfile

import pytest

from tests.conftest import ROOT


@pytest.mark.slow
def test_wheel_installs_only_the_beamcrawl_name(tmp_path):
    subprocess.run([sys.executable, '-m', 'pip', 'wheel', '--no-deps', '-q', '-w', str(tmp_path),
                    ROOT], check=True, capture_output=True)
    (wheel,) = [n for n in os.listdir(tmp_path) if n.endswith('.whl')]
    with zipfile.ZipFile(tmp_path / wheel) as z:
        names = z.namelist()
        (top_level,) = [n for n in names if n.endswith('.dist-info/top_level.txt')]
        assert z.read(top_level).decode().split() == ['beamcrawl']
        entry_points = z.read(top_level.replace('top_level.txt', 'entry_points.txt')).decode()
    roots = {n.split('/', 1)[0] for n in names if not n.split('/', 1)[0].endswith('.dist-info')}
    assert roots == {'beamcrawl'}
    for needed in ('beamcrawl/pipelines/cli.py', 'beamcrawl/transforms/policy/urls.py',
                   'beamcrawl/conf/crawler-default.yaml', 'beamcrawl/conf/regex-urlfilter.txt',
                   'beamcrawl/transforms/testing/web.py'):
        assert needed in names
    assert 'beamcrawl = beamcrawl.pipelines.cli:main' in entry_points


def test_every_command_module_runs_with_python_m():
    proc = subprocess.run([sys.executable, '-m', 'beamcrawl.pipelines.readdb', '--help'],
                          capture_output=True, text=True, cwd='/')
    assert proc.returncode == 0 and 'beamcrawl readdb' in proc.stdout
