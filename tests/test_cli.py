"""The command line: errors as one line with exit 2, advice that fits the error, help."""

import pytest

from tests.conftest import run_cli, write_seeds


@pytest.mark.parametrize('args,code,message', [
    (['frobnicate', 'c'], 2, "unknown command 'frobnicate'"),
    (['inject', 'c'], 2, 'the following arguments are required: SEEDS'),
    (['inject', 'c', 's', '--now', 'noon'], 2, "--now 'noon'"),
    (['inject', 'c', 's', '-D', 'db.score.injectd=1'], 2, "did you mean 'db.score.injected'"),
    (['readdb', 'c', '--stats', '--conf', '/nonexistent.yaml'], 2, 'not found'),
])
def test_user_errors_are_one_line(args, code, message):
    proc = run_cli(*args, check=False)
    assert proc.returncode == code
    assert message in proc.stderr
    assert len(proc.stderr.strip().splitlines()) == 1, proc.stderr
    assert 'Traceback' not in proc.stderr


def test_help_lists_commands():
    proc = run_cli('--help')
    assert 'inject' in proc.stdout and 'readdb' in proc.stdout


def test_help_lists_every_command_once_in_its_group():
    """`beamcrawl --help` groups the commands as `bin/nutch` does: each in one group, each
    with its description on a line of at most 100 columns."""
    from beamcrawl.pipelines.cli import COMMANDS, GROUPS
    grouped = [name for _, names in GROUPS for name in names]
    assert sorted(set(COMMANDS) - set(grouped)) == []
    assert len(grouped) == len(set(grouped))
    out = run_cli('--help').stdout.splitlines()
    listed = [line.split()[0] for line in out if line.startswith('    ')]
    assert sorted(listed) == sorted(COMMANDS)
    assert out.index('  checkers:') < out.index('    parsechecker' + ' ' * 9 +
                                                'Fetch and parse one URL with the crawl\'s '
                                                'settings and show the result')
    assert max(len(line) for line in out) <= 100


def test_python_m_pipeline_module_takes_the_same_arguments(tmp_path):
    import subprocess
    import sys

    from tests.conftest import ROOT, write_seeds
    seeds = write_seeds(tmp_path / 's', ['http://a.test/'])
    proc = subprocess.run([sys.executable, '-m', 'beamcrawl.pipelines.inject',
                           str(tmp_path / 'c'), seeds], cwd=ROOT, capture_output=True, text=True)
    assert proc.returncode == 0 and '1 new' in proc.stdout


@pytest.mark.parametrize('given, seen', [(None, 'ERROR'), ('DEBUG', 'DEBUG')])
def test_grpc_core_logs_only_errors_unless_the_user_says(given, seen):
    """gRPC's C core writes its INFO lines (a GOAWAY when a local worker fails) to stderr
    unless GRPC_VERBOSITY says otherwise: every command sets it, before Beam and gRPC are
    imported, and a user's own setting wins."""
    import os
    import subprocess
    import sys

    from tests.conftest import ROOT
    env = {k: v for k, v in os.environ.items() if k != 'GRPC_VERBOSITY'}
    if given:
        env['GRPC_VERBOSITY'] = given
    code = ('import sys, beamcrawl.pipelines, os; '
            'assert "grpc" not in sys.modules and "apache_beam" not in sys.modules; '
            'print(os.environ.get("GRPC_VERBOSITY"))')
    proc = subprocess.run([sys.executable, '-c', code], cwd=ROOT, env=env,
                          capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == seen


@pytest.mark.parametrize('text, line', [
    ('org.apache.flink.runtime.rest.util.RestClientException: [Could not upload job files.\n'
     '\tat org.apache.flink.runtime.client.ClientUtils.uploadJobGraphFiles(ClientUtils.java:86)\n'
     'Caused by: java.io.IOException: PUT operation failed: Broken pipe\n'
     'Caused by: java.io.IOException: No space left on device\n\tat x.y(Z.java:1)\n]',
     'Caused by: java.io.IOException: No space left on device'),
    ('Traceback (most recent call last):\n  File "x.py", line 1\nRuntimeError: job FAILED\n]',
     'RuntimeError: job FAILED'),
    ('the job was cancelled\n', 'the job was cancelled'),
    ('\n  \n', ''),
])
def test_a_probe_failure_is_told_by_its_most_telling_line(text, line):
    from beamcrawl.transforms.runners.portable import telling_line
    assert telling_line(text.splitlines()) == line


@pytest.mark.parametrize('command', [['inject', 'SEEDS'], ['generate'], ['updatedb'],
                                     ['readdb', '--stats'], ['fetch']])
def test_a_crawl_dir_that_is_a_file_is_one_line(tmp_path, command):
    crawl = tmp_path / 'crawl'
    crawl.write_text('not a directory\n')
    args = [a if a != 'SEEDS' else write_seeds(tmp_path / 'seeds', ['http://x.test/'])
            for a in command]
    proc = run_cli(args[0], str(crawl), *args[1:], check=False)
    assert proc.returncode == 2 and 'Traceback' not in proc.stderr
    (line,) = proc.stderr.strip().splitlines()
    assert line.endswith(f'{crawl}: is a file, not a crawl directory (name a directory; it is '
                         f'created if absent)')
    assert crawl.read_text() == 'not a directory\n'


def test_a_path_below_a_file_gets_advice_that_fits(tmp_path):
    (tmp_path / 'afile').write_text('x')
    proc = run_cli('inject', str(tmp_path / 'afile' / 'crawl'),
                   write_seeds(tmp_path / 'seeds', ['http://x.test/']),
                   '-D', 'domain.extra.suffixes=test', check=False)
    assert proc.returncode == 2 and 'Traceback' not in proc.stderr
    (line,) = [l for l in proc.stderr.splitlines() if l.startswith('beamcrawl inject:')]
    assert 'errno 20 ENOTDIR' in line and 'a part of that path is a file' in line
    assert 'free space' not in line


def test_an_unexpected_error_exits_2_not_1(monkeypatch, capsys):
    """A defect still exits "failed" (2), never "nothing to do" (1), with its traceback."""
    from beamcrawl.pipelines import cli, readdb

    def broken(*_):
        raise ZeroDivisionError('a bug')
    monkeypatch.setattr(readdb, 'run', broken)
    assert cli.main(['readdb', '/nonexistent-crawl', '--stats']) == 2
    err = capsys.readouterr().err
    assert 'Traceback' in err
    assert err.strip().splitlines()[-1] == ('beamcrawl readdb: failed: ZeroDivisionError: a bug '
                                            '(an unexpected error; the traceback is above)')
