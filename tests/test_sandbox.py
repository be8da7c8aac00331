"""The sandbox child process (transforms/base/sandbox.py): results and errors come back; a call
that hangs is killed at its timeout, one that takes too much memory fails, one that kills its
process is reported; each time the next call gets a new child."""

import pytest

from beamcrawl.transforms.base.sandbox import Sandbox


@pytest.fixture
def sandbox():
    box = Sandbox(memory_bytes=512 * 1024 * 1024)
    yield box
    box.close()


def test_results_and_errors_come_back_and_the_child_is_kept(sandbox):
    assert sandbox.call('tests.sandbox_calls:add', (2, 3), timeout=60) == ('ok', 5)
    first = sandbox.call('tests.sandbox_calls:pid', (), timeout=60)
    assert sandbox.call('tests.sandbox_calls:fail', ('no',), timeout=60) == \
        ('error', 'ValueError: no')
    assert sandbox.call('tests.sandbox_calls:pid', (), timeout=60) == first
    assert sandbox.call('tests.sandbox_calls:missing', (), timeout=60)[0] == 'error'


def test_a_call_that_hangs_is_killed_at_its_timeout(sandbox):
    before = sandbox.call('tests.sandbox_calls:pid', (), timeout=60)[1]
    assert sandbox.call('tests.sandbox_calls:hang', (), timeout=0.5) == ('timeout', '')
    after = sandbox.call('tests.sandbox_calls:pid', (), timeout=60)
    assert after[0] == 'ok' and after[1] != before


def test_a_call_beyond_the_memory_limit_fails(sandbox):
    outcome, value = sandbox.call('tests.sandbox_calls:eat', (2048,), timeout=120)
    assert (outcome, value[:11]) in (('error', 'MemoryError'), ('crashed', value[:11]))
    assert sandbox.call('tests.sandbox_calls:eat', (10,), timeout=60) == ('ok', 10)


@pytest.mark.parametrize('function,args,expected', [
    ('segfault', (), 'signal 11'), ('leave', (3,), 'exit 3')])
def test_a_call_that_kills_its_process_is_reported(sandbox, function, args, expected):
    assert sandbox.call(f'tests.sandbox_calls:{function}', args, timeout=60) == \
        ('crashed', expected)
    assert sandbox.call('tests.sandbox_calls:add', (1, 1), timeout=60) == ('ok', 2)
