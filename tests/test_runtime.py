"""The runtime: Beam options split from ours, --now, how many worker processes a stage gets."""

import argparse
import os

import apache_beam as beam
import pytest

from beamcrawl.transforms.base.errors import UserError
from beamcrawl.transforms.runners.runtime import (local_workers, make_pipeline, parse_now,
                                                  split_beam_args, workers_of)


def _ours():
    p = argparse.ArgumentParser()
    p.add_argument('crawl_dir')
    p.add_argument('segment', nargs='?')
    p.add_argument('--now')
    p.add_argument('--top-n')
    return p


@pytest.mark.parametrize('argv,mine,beam', [
    (['c', '--runner', 'FlinkRunner', 'seg'], ['c', 'seg'], ['--runner', 'FlinkRunner']),
    (['c', '--runner=FlinkRunner'], ['c'], ['--runner=FlinkRunner']),
    (['c', '--flink_master', '[local]', '--flink_version', '1.20', '--now', '5'],
     ['c', '--now', '5'], ['--flink_master', '[local]', '--flink_version', '1.20']),
    (['c', '--save_main_session', 'seg'], ['c', 'seg'], ['--save_main_session']),
    (['c', '--environment_type=LOOPBACK', '--top-n', '3'], ['c', '--top-n', '3'],
     ['--environment_type=LOOPBACK']),
    (['c', '--not-a-beam-option', 'x'], ['c', '--not-a-beam-option', 'x'], []),
])
def test_split_beam_args(argv, mine, beam):
    assert split_beam_args(argv, _ours()) == (mine, beam)


@pytest.mark.parametrize('text,ms', [
    ('1795305600000', 1795305600000),
    ('2026-11-22T00:00:00Z', 1795305600000),
    ('2026-11-22T01:00:00+01:00', 1795305600000),
    ('2026-11-22T00:00:00.250Z', 1795305600250),
])
def test_parse_now(text, ms):
    assert parse_now(text) == ms


@pytest.mark.parametrize('text', ['2026-11-22T00:00:00', 'yesterday', '2026-13-01T00:00:00Z'])
def test_parse_now_rejects(text):
    with pytest.raises(UserError):
        parse_now(text)


def test_parse_now_defaults_to_wall_clock():
    import time
    before = int(time.time() * 1000)
    now = parse_now(None)
    assert before <= now <= int(time.time() * 1000)


@pytest.mark.parametrize('args, records, expected', [
    ([], 10, 1),                                        # small: this process
    ([], 10 ** 7, os.cpu_count()),                      # large: one per core
    (['--direct_num_workers=3'], 10, 3),                # Beam's option decides
    (['--runner', 'FlinkRunner'], 10 ** 7, 1),          # not the local runner
])
def test_local_workers(cfg, args, records, expected):
    assert local_workers(args, cfg, records) == expected


@pytest.mark.parametrize('args, expected', [
    ([], 1),                                            # a small stage: this process
    (['--direct_num_workers=3'], 3),                    # Beam's option decides
])
def test_a_pipeline_knows_its_workers(cfg, args, expected):
    """Stages size their partitions by workers_of(pipeline): what make_pipeline chose."""
    assert workers_of(make_pipeline(args, cfg, 10)) == expected
    assert workers_of(beam.Pipeline(options=beam.options.pipeline_options.PipelineOptions(
        ['--runner', 'FlinkRunner']))) == 1


def test_bundles_end_without_waiting_for_the_state_sampler():
    """runtime.py makes Beam's state sampler sleep at most 10 ms between samples (sampler.py):
    every bundle's end waits for that sleep."""
    from apache_beam.runners.worker import statesampler
    from apache_beam.utils.counters import CounterFactory

    from beamcrawl.transforms.runners.sampler import SAMPLING_PERIOD_MS
    sampler = statesampler.StateSampler('step', CounterFactory())
    assert SAMPLING_PERIOD_MS == 10 and sampler.sampling_period_ms == SAMPLING_PERIOD_MS
    assert statesampler.StateSampler('step', CounterFactory(), 500).sampling_period_ms == 10
    sampler.start()
    sampler.stop()
    assert sampler.finished


_DEFERRED_SCRIPT = '''
import sys
from beamcrawl.pipelines import cli
cli.skip_unused_beam_imports()
import apache_beam
from apache_beam.io.filesystems import FileSystems
from beamcrawl.transforms.storage.stores import load_filesystems_on_demand
load_filesystems_on_demand(cli._deferred)
from beamcrawl.transforms import fetch, generate, inject, updatedb  # noqa
print(sorted(n for n in ('boto3', 'hdfs', 'pymongo', 'pyarrow') if sys.modules.get(n) is not None))
print(type(FileSystems.get_filesystem('/tmp/x')).__name__)
print(type(FileSystems.get_filesystem('s3://bucket/x')).__name__, 'boto3' in sys.modules)
from apache_beam.io.aws.clients.s3 import boto3_client
print(getattr(boto3_client.Client.__init__, 'shared_clients', False))
try:
    FileSystems.get_filesystem('hdfs://host/x')
except ValueError as e:
    print('hdfs:', e)
'''


def test_the_program_loads_the_s3_and_hdfs_filesystems_when_a_path_names_them():
    """The `beamcrawl` program starts without the clients of S3 and HDFS (0.11 s) and loads each
    with the first path of its scheme, its clients shared (stores.py)."""
    import subprocess
    import sys
    out = subprocess.run([sys.executable, '-c', _DEFERRED_SCRIPT], capture_output=True,
                         text=True, check=True).stdout.splitlines()
    assert out[0] == '[]'                   # nothing of S3, HDFS, MongoDB or Arrow yet
    assert out[1] == 'LocalFileSystem'
    assert out[2] == 'S3FileSystem True'
    assert out[3] == 'True'
    assert out[4] == 'hdfs: pipeline_options is not set'    # HadoopFileSystem, loaded


_BEARTYPE_SCRIPT = '''
import sys
from beamcrawl.pipelines import cli
cli.skip_unused_beam_imports()
import apache_beam
from beamcrawl.transforms import fetch, generate, inject, updatedb  # noqa
print('beartype._decor.decormain' in sys.modules)
from apache_beam.typehints import typehints
print(typehints.is_consistent_with(bool, int), typehints.is_consistent_with(str, int))
print('beartype._decor.decormain' in sys.modules)
import beartype
import beartype.door
import beartype.roar
print(callable(beartype.beartype), beartype.door.is_subhint(bool, int),
      beartype.roar.BeartypeDoorException is typehints.BeartypeDoorException)
'''


def test_the_program_imports_beartype_when_beam_first_uses_it():
    """The `beamcrawl` program starts without beartype's decorator machinery (startup.py
    defer_beartype); Beam's check that uses it still answers, through the real package."""
    import subprocess
    import sys
    out = subprocess.run([sys.executable, '-c', _BEARTYPE_SCRIPT], capture_output=True,
                         text=True, check=True).stdout.splitlines()
    assert out == ['False', 'True False', 'True', 'True True True']


_HTTPLIB2_SCRIPT = '''
import sys
from beamcrawl.pipelines import cli
cli.skip_unused_beam_imports()
import apache_beam
from apache_beam.runners.portability.fn_api_runner import FnApiRunner
from beamcrawl.transforms import fetch  # noqa
stand_in = sys.modules['httplib2']
print(getattr(stand_in, '__file__', None) is None, 'pyparsing' in sys.modules,
      sys.modules['bson'] is None)
from apache_beam.internal import http_client
http = http_client.get_new_http()
import httplib2
print(httplib2 is sys.modules['httplib2'] is not stand_in, httplib2.__file__.endswith('.py'),
      isinstance(http, httplib2.Http), stand_in.Http is httplib2.Http)
'''


def test_the_program_imports_httplib2_when_beam_first_uses_it():
    """The `beamcrawl` program starts without httplib2, which Beam imports only for staging
    files to a cluster (startup.defer_module), nor bson; the first use of httplib2 imports the
    real module, which then stands in sys.modules, and the stand-in forwards to it."""
    import subprocess
    import sys
    out = subprocess.run([sys.executable, '-c', _HTTPLIB2_SCRIPT], capture_output=True,
                         text=True, check=True).stdout.splitlines()
    assert out == ['True False True', 'True True True True']


class _Counted(beam.DoFn):
    """A stateful DoFn: the running count per key, from a bag of what it saw."""
    SEEN = beam.transforms.userstate.BagStateSpec('seen', beam.coders.VarIntCoder())

    def process(self, element, seen=beam.DoFn.StateParam(SEEN)):
        seen.add(element[1])
        yield element[0], len(list(seen.read()))


def test_dofn_specs_are_read_once_per_dofn_and_as_beam_reads_them(cfg, monkeypatch):
    from apache_beam.testing.util import assert_that, equal_to
    from apache_beam.transforms import userstate

    from beamcrawl.transforms.runners import dofnspecs
    assert userstate.get_dofn_specs.remembered        # installed by runtime.py
    beam_read, asked = userstate.get_dofn_specs.read, []
    monkeypatch.setattr(userstate, 'get_dofn_specs', lambda d: asked.append(d) or beam_read(d))
    dofnspecs.remember_dofn_specs()                   # remembers what the counting one says
    stateful, plain = _Counted(), beam.Map(len).dofn
    for _ in range(3):
        state, timers = userstate.get_dofn_specs(stateful)
        assert [s.name for s in state] == ['seen'] and timers == set()
        assert userstate.get_dofn_specs(plain) == (set(), set()) == beam_read(plain)
        state.clear()                                 # a caller's sets are its own
    assert len(asked) == 2 and {id(d) for d in asked} == {id(stateful), id(plain)}  # once each
    assert userstate.is_stateful_dofn(stateful) and not userstate.is_stateful_dofn(plain)
    p = make_pipeline([], cfg)                        # and a stateful pipeline runs as before
    out = p | beam.Create([('a', 1), ('a', 2), ('b', 3)]) | beam.ParDo(_Counted())
    assert_that(out, equal_to([('a', 1), ('a', 2), ('b', 1)]))
    p.run().wait_until_finish()
