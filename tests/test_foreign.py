"""Data beamcrawl did not write is never read as empty nor changed: a Nutch crawl directory (or
any crawldb, linkdb or segment not in beamcrawl's layout) is refused by every command with one
line naming what was found, and nothing in it is modified."""

import hashlib
import os

import pytest

from tests.conftest import run_cli, write_seeds

SEGMENT = '20261101000000'
# Nutch 1.x's layout: MapFiles (a directory with data and index) and SequenceFiles, Hadoop's
# part-r-NNNNN names, _SUCCESS markers and .crc checksum files.
NUTCH_FILES = [
    'crawldb/current/part-r-00000/data', 'crawldb/current/part-r-00000/index',
    'crawldb/current/part-r-00000/.data.crc', 'crawldb/current/part-r-00000/.index.crc',
    'crawldb/current/_SUCCESS', 'crawldb/old/part-r-00000/data',
    'crawldb/old/part-r-00000/index',
    'linkdb/current/part-r-00000/data', 'linkdb/current/part-r-00000/index',
    f'segments/{SEGMENT}/crawl_generate/part-r-00000',
    f'segments/{SEGMENT}/crawl_fetch/part-r-00000/data',
    f'segments/{SEGMENT}/crawl_fetch/part-r-00000/index',
    f'segments/{SEGMENT}/content/part-r-00000/data',
    f'segments/{SEGMENT}/content/part-r-00000/index',
    f'segments/{SEGMENT}/parse_data/part-r-00000/data',
    f'segments/{SEGMENT}/parse_text/part-r-00000/data',
    f'segments/{SEGMENT}/crawl_parse/part-r-00000',
]


def _nutch_crawl(root, files=NUTCH_FILES):
    for name in files:
        path = os.path.join(root, name)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, 'wb') as f:        # a SequenceFile's header, then some bytes
            f.write(b'SEQ\x06' + hashlib.sha1(name.encode()).digest())
    return root


def _snapshot(root):
    """Every file and directory under root, with its bytes and modification time."""
    state = {}
    for directory, dirs, files in os.walk(root):
        for name in dirs + files:
            path = os.path.join(directory, name)
            stat = os.stat(path)
            data = open(path, 'rb').read() if os.path.isfile(path) else None
            state[os.path.relpath(path, root)] = (data, stat.st_mtime_ns)
    return state


COMMANDS = [
    ['inject', 'SEEDS'], ['inject', 'SEEDS', '--overwrite'], ['generate'], ['fetch'],
    ['fetch', SEGMENT], ['parse'], ['updatedb'], ['invertlinks'], ['readdb', '--stats'],
    ['readdb', '--dump', 'OUT'], ['readseg', '--list'], ['readlinkdb', '--dump', 'OUT'],
    ['crawl', '--seeds', 'SEEDS', '--rounds', '1'], ['dedup'], ['index'], ['config'],
    ['warc-export', 'OUT'], ['sitemap', '--from-robots'],
]


@pytest.mark.parametrize('command', COMMANDS, ids=lambda c: ' '.join(c))
def test_every_command_refuses_a_nutch_crawl_and_changes_nothing(tmp_path, command):
    crawl = _nutch_crawl(str(tmp_path / 'nutch-crawl'))
    before = _snapshot(crawl)
    seeds = write_seeds(tmp_path / 'seeds', ['http://x.test/'])
    args = [{'SEEDS': seeds, 'OUT': str(tmp_path / 'out')}.get(a, a) for a in command]
    proc = run_cli(args[0], crawl, *args[1:], '-D', 'http.agent.name=x',
                   '-D', 'domain.extra.suffixes=test', check=False)
    assert proc.returncode == 2 and 'Traceback' not in proc.stderr, proc.stderr
    (line,) = proc.stderr.strip().splitlines()
    assert f'{crawl}/crawldb/current/part-r-00000: the crawldb is in Nutch\'s (Hadoop) format, ' \
           f'not beamcrawl\'s' in line
    assert _snapshot(crawl) == before and not os.path.exists(tmp_path / 'out')


@pytest.mark.parametrize('files, found, what', [
    ([f for f in NUTCH_FILES if 'crawldb' not in f], 'linkdb/current/part-r-00000', 'the linkdb'),
    ([f for f in NUTCH_FILES if f.startswith('segments')],
     f'segments/{SEGMENT}/content/part-r-00000', f'segment {SEGMENT}'),
])
def test_a_nutch_linkdb_or_segment_alone_is_refused(tmp_path, files, found, what):
    crawl = _nutch_crawl(str(tmp_path / 'c'), files)
    before = _snapshot(crawl)
    proc = run_cli('readseg', crawl, '--list', check=False)
    assert proc.returncode == 2
    assert f"{crawl}/{found}: {what} is in Nutch's (Hadoop) format" in proc.stderr
    assert _snapshot(crawl) == before


def test_a_crawldb_given_for_the_crawl_dir_is_explained(tmp_path):
    crawl = _nutch_crawl(str(tmp_path / 'crawl'))
    proc = run_cli('readdb', os.path.join(crawl, 'crawldb'), '--stats', check=False)
    assert proc.returncode == 2
    assert 'looks like a crawldb or linkdb itself' in proc.stderr
    assert 'take the crawl directory that holds crawldb/' in proc.stderr


def test_a_beamcrawl_crawl_is_not_foreign(tmp_path):
    crawl = str(tmp_path / 'crawl')
    run_cli('inject', crawl, write_seeds(tmp_path / 'seeds', ['http://x.test/']),
            '-D', 'domain.extra.suffixes=test')
    run_cli('generate', crawl)
    run_cli('readseg', crawl, '--list')
    run_cli('readdb', crawl, '--stats')
