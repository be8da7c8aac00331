"""Crawl-dir layout: the lock, the write-aside install, recovery after a cut-off install."""

import os
import socket
import subprocess

import pytest

from beamcrawl.transforms.base.errors import LockedError
from beamcrawl.transforms.storage import fs
from beamcrawl.transforms.storage.layout import CrawlLayout


def _version(directory, text):
    os.makedirs(directory)
    with open(os.path.join(directory, 'part-00000.avro'), 'w') as f:
        f.write(text)


def _read(directory):
    with open(os.path.join(directory, 'part-00000.avro')) as f:
        return f.read()


def test_paths(tmp_path):
    crawl = CrawlLayout(str(tmp_path / 'c'))
    assert crawl.crawldb.current == str(tmp_path / 'c/crawldb/current')
    assert crawl.crawldb.lock_path == str(tmp_path / 'c/crawldb/.locked')
    assert crawl.linkdb.current == str(tmp_path / 'c/linkdb/current')
    assert crawl.segment_part('20261122000000', 'crawl_fetch') == \
        str(tmp_path / 'c/segments/20261122000000/crawl_fetch')
    with pytest.raises(ValueError):
        crawl.segment_part('x', 'nonsense')


def test_second_locker_gets_one_line_naming_the_lock(tmp_path):
    db = CrawlLayout(str(tmp_path)).crawldb
    with db.lock('first'):
        with pytest.raises(LockedError) as e:
            db.lock('second').acquire()
    message = str(e.value)
    assert '\n' not in message
    assert db.lock_path in message and 'delete' in message and 'command=first' in message
    assert not os.path.exists(db.lock_path)      # released on exit
    with db.lock('third'):                       # and can be taken again
        pass


def _dead_pid() -> int:
    proc = subprocess.Popen(['true'])
    proc.wait()
    return proc.pid


@pytest.mark.parametrize('holder,taken_over', [
    (lambda: f'pid={_dead_pid()} host={socket.gethostname()} command=fetch', True),
    (lambda: f'pid={_dead_pid()} host=elsewhere.example command=fetch', False),
    (lambda: f'pid={os.getpid()} host={socket.gethostname()} command=fetch', False),
    (lambda: '', False),
])
def test_a_lock_left_by_a_dead_process_of_this_host_is_taken_over(tmp_path, holder, taken_over):
    db = CrawlLayout(str(tmp_path)).crawldb
    os.makedirs(os.path.dirname(db.lock_path), exist_ok=True)
    with open(db.lock_path, 'w') as f:
        f.write(holder())
    if taken_over:
        with db.lock('mine'):
            assert 'command=mine' in open(db.lock_path).read()
    else:
        with pytest.raises(LockedError):
            db.lock('mine').acquire()
        assert os.path.exists(db.lock_path)


def test_lock_released_when_the_block_fails(tmp_path):
    db = CrawlLayout(str(tmp_path)).crawldb
    with pytest.raises(RuntimeError):
        with db.lock():
            raise RuntimeError('boom')
    assert not os.path.exists(db.lock_path)


@pytest.mark.parametrize('keep', [True, False])
def test_install_moves_current_to_old(tmp_path, keep):
    db = CrawlLayout(str(tmp_path)).crawldb
    first = db.new_version_dir()
    _version(first, 'v1')
    db.install(first, keep_backup=keep)
    second = db.new_version_dir()
    _version(second, 'v2')
    db.install(second, keep_backup=keep)
    assert _read(db.current) == 'v2'
    assert os.path.exists(db.old) is keep
    if keep:
        assert _read(db.old) == 'v1'
    assert not os.path.exists(first) and not os.path.exists(second)


def test_cut_off_install_is_readable_and_recovered(tmp_path):
    """A process killed between the two renames leaves old/ only: readers use it, the next
    updater moves it back and removes abandoned versions."""
    db = CrawlLayout(str(tmp_path)).crawldb
    _version(db.old, 'v1')
    abandoned = db.new_version_dir()
    _version(abandoned, 'half')
    assert db.readable_dir() == db.old
    assert db.part_files() == [os.path.join(db.old, 'part-00000.avro')]
    db.recover()
    assert _read(db.current) == 'v1' and not os.path.exists(db.old)
    assert not os.path.exists(abandoned)


def test_new_database_has_no_parts(tmp_path):
    db = CrawlLayout(str(tmp_path / 'nothing')).crawldb
    assert db.readable_dir() is None and db.part_files() == []


def test_helpers(tmp_path):
    target = str(tmp_path / 'a' / 'b')
    fs.mkdirs(target)
    fs.mkdirs(target)           # idempotent
    fs.delete(target)
    fs.delete(target)           # absent is fine
    assert not os.path.exists(target)
