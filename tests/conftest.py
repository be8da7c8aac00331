"""Shared fixtures: the test web, the pinned local runner, config, CLI helpers."""

import os
import signal
import subprocess
import sys
import time
from typing import List, Optional

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
if ROOT not in sys.path:
    sys.path.insert(0, ROOT)

from tests.testweb import Page, TestWeb, html_page, redirect  # noqa: E402


def _default_sites():
    """A small multi-host web; later tests add hosts and pages with `testweb.add`."""
    return {
        'www.a.test': {
            '/robots.txt': Page(body=b'User-agent: *\nDisallow: /private/\n',
                                content_type='text/plain'),
            '/': html_page('A home', links=['/page1.html', 'http://b.test/', '/private/x']),
            '/page1.html': html_page('A page 1', links=['/']),
            '/private/x': html_page('private'),
        },
        'b.test': {
            '/': html_page('B home', links=['http://www.a.test/']),
            '/old': redirect('http://b.test/'),
            '/gone': Page(status=410, body=b'gone'),
            '/error': Page(status=500, body=b'boom'),
        },
    }


# What makes a test end to end (the `e2e` tier): the command line, a subprocess, a kill, Flink,
# or the loopback test web (requests over sockets, deadlines and delays that take their time).
_E2E_SIGNS = ('run_cli(', 'start_command(', 'main([', 'run_command(', 'subprocess.', 'kill_when(',
              'cli.main(', 'Popen(', 'TestWeb(')
_E2E_FIXTURES = {'web', 'testweb', 'local_web', 'forwarder', 'slow_tls', 'case_web'}


def _e2e(item) -> bool:
    """Whether a test (or a helper of its module it calls) goes through the command line, a
    subprocess or Flink. Tests may say so themselves with an explicit marker."""
    if item.get_closest_marker('flink') or item.get_closest_marker('slow') or \
            _E2E_FIXTURES & set(getattr(item, 'fixturenames', ())):
        return True
    function = getattr(item, 'function', None)
    if function is None:
        return False
    import inspect
    try:
        source = inspect.getsource(function)
    except (OSError, TypeError):
        return False
    sources = [source]
    module = inspect.getmodule(function)
    for name, helper in vars(module).items():
        if inspect.isfunction(helper) and helper.__module__.startswith('tests.') and \
                not name.startswith('test_') and f'{name}(' in source:
            try:
                sources.append(inspect.getsource(helper))
            except (OSError, TypeError):
                pass
    return any(sign in text for text in sources for sign in _E2E_SIGNS)


def pytest_collection_modifyitems(config, items):
    """Every test is in one tier: `e2e` (see _e2e) or `unit` (pytest -m unit, the inner loop)."""
    for item in items:
        if item.get_closest_marker('unit') or item.get_closest_marker('e2e'):
            continue
        item.add_marker(pytest.mark.e2e if _e2e(item) else pytest.mark.unit)


@pytest.fixture(scope='session')
def testweb():
    """The multi-host test web (session-wide). Its request log is cleared for each user."""
    web = TestWeb(_default_sites()).start()
    yield web
    web.stop()


@pytest.fixture
def web(testweb):
    testweb.clear_log()
    return testweb


@pytest.fixture
def local_web():
    """A web served on 127.0.0.1 itself (an intranet host: the address policy refuses it unless
    http.address.allow says otherwise), fetched without a proxy."""
    web = TestWeb({'127.0.0.1': {
        '/robots.txt': Page(status=404),
        '/': html_page('intranet home', links=['/a', '/b']),
        '/a': html_page('a', links=['/']), '/b': html_page('b'),
    }}).start()
    yield web
    web.stop()


def intranet_site(tmp_path, extra=''):
    """A site file for crawling local_web: loopback allowed, only its URLs pass the filter."""
    (tmp_path / 'only-intranet.txt').write_text('+^http://127\\.0\\.0\\.1:\n-.\n')
    site = tmp_path / 'site.yaml'
    site.write_text(f'http.agent.name: intranetbot\nhttp.address.allow: 127.0.0.0/8\n'
                    f'fetcher.server.delay: 0\nurlfilter.regex.file: only-intranet.txt\n{extra}')
    return str(site)


@pytest.fixture
def runner():
    """The runner beamcrawl pins when no --runner is given."""
    from apache_beam.runners.portability.fn_api_runner import FnApiRunner
    return FnApiRunner()


@pytest.fixture
def cfg():
    from beamcrawl.transforms.base.config import load_config
    return load_config(defines=['domain.extra.suffixes=test'])


def cli_env(extra: Optional[dict] = None) -> dict:
    """The environment of a command under test: ours, without a BEAMCRAWL_CONF of the machine,
    plus `extra`."""
    env = {k: v for k, v in os.environ.items() if k != 'BEAMCRAWL_CONF'}
    env.update(extra or {})
    return env


def run_cli(*args: str, check: bool = True, timeout: float = 300,
            env: Optional[dict] = None) -> subprocess.CompletedProcess:
    """Runs `python -m beamcrawl.pipelines.cli ARGS` in a subprocess (exit codes and stderr as
    a user sees them); `env` adds environment variables."""
    proc = subprocess.run([sys.executable, '-m', 'beamcrawl.pipelines.cli', *args], cwd=ROOT,
                          capture_output=True, text=True, timeout=timeout, env=cli_env(env))
    if check and proc.returncode != 0:
        raise AssertionError(f'beamcrawl {" ".join(args)} exited {proc.returncode}:\n'
                             f'{proc.stdout}\n{proc.stderr}')
    return proc


def logged_counters(stderr: str) -> dict:
    """The counters a command logged at its end ('HH:MM:SS INFO   name   N' lines)."""
    out = {}
    for line in stderr.splitlines():
        parts = line.split()
        if len(parts) == 4 and parts[1] == 'INFO' and parts[3].isdigit() and '.' in parts[2]:
            out[parts[2]] = out.get(parts[2], 0) + int(parts[3])
    return out


def write_seeds(path, lines: List[str]) -> str:
    with open(path, 'w', encoding='utf-8') as f:
        f.write('\n'.join(lines) + '\n')
    return str(path)


def read_db(crawl_dir) -> dict:
    """url → record of the crawldb's readable version, read with plain fastavro."""
    from beamcrawl.transforms.storage.layout import CrawlLayout
    from beamcrawl.transforms.storage.parts import iter_records
    return {r['url']: r for r in iter_records(CrawlLayout(str(crawl_dir)).crawldb.part_files())}


def write_db(crawl_dir, records) -> None:
    """Writes a crawldb version directly (as a previous beamcrawl run would have left it)."""
    from beamcrawl.transforms.storage.layout import CrawlLayout
    from beamcrawl.transforms.storage.partwriter import write_avro_file
    from beamcrawl.transforms.storage.records import CRAWL_DATUM_SCHEMA
    db = CrawlLayout(str(crawl_dir)).crawldb
    write_avro_file(f'{db.current}/part-00000.avro', CRAWL_DATUM_SCHEMA, list(records))


def read_parts(paths) -> list:
    from beamcrawl.transforms.storage.parts import iter_records
    return list(iter_records(sorted(paths)))


def start_command(*args: str) -> subprocess.Popen:
    """Starts `python -m beamcrawl.pipelines.cli ARGS` in the background (output discarded)."""
    return subprocess.Popen([sys.executable, '-m', 'beamcrawl.pipelines.cli', *args], cwd=ROOT,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


def kill_when(proc: subprocess.Popen, seen, what: str) -> None:
    """SIGKILLs `proc` as soon as `seen()` is true (polled every 2 ms). Fails when the process
    ends first: a kill test must kill at the point it means to, or say that it could not."""
    while not seen():
        if proc.poll() is not None:
            raise AssertionError(f'the process ended (exit {proc.returncode}) before {what}')
        time.sleep(0.002)
    proc.send_signal(signal.SIGKILL)
    proc.wait()
