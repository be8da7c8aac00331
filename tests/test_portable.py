"""Portable-runner checks that need no Flink: a --job_endpoint where nothing answers."""

import socket

from tests.conftest import run_cli, write_seeds
from tests.test_localflink import free_ports


def _inject(tmp_path, endpoint, pool_port):
    # runner.probe.timeout very large: a command that waited for the worker probe would hang
    # here (and hit pytest's timeout) instead of returning with the endpoint's message.
    return run_cli('inject', str(tmp_path / 'crawl'),
                   write_seeds(tmp_path / 'seeds.txt', ['http://a.test/']),
                   '-D', 'runner.probe.timeout=1000000', '--runner', 'PortableRunner',
                   '--job_endpoint', endpoint, '--environment_type', 'EXTERNAL',
                   '--environment_config', f'localhost:{pool_port}', check=False)


def test_a_job_endpoint_where_nothing_listens_is_named_in_one_line(tmp_path):
    job, pool = free_ports(2)
    proc = _inject(tmp_path, f'localhost:{job}', pool)
    assert proc.returncode == 2, proc.stderr
    assert proc.stderr.strip().splitlines()[-1] == (
        f'beamcrawl inject: the job endpoint localhost:{job} does not answer (Connection '
        f'refused): is the job server running? (`beamcrawl flink start` starts the local '
        f'cluster and prints its options)')
    assert 'Traceback' not in proc.stderr
    assert 'worker' not in proc.stderr


def test_a_job_endpoint_that_is_not_a_grpc_server_is_named_in_one_line(tmp_path):
    (pool,) = free_ports(1)
    with socket.socket() as silent:      # accepts connections (the kernel does), says nothing
        silent.bind(('127.0.0.1', 0))
        silent.listen()
        endpoint = f'localhost:{silent.getsockname()[1]}'
        proc = _inject(tmp_path, endpoint, pool)
    assert proc.returncode == 2, proc.stderr
    line = proc.stderr.strip().splitlines()[-1]
    assert line.startswith(f'beamcrawl inject: the job endpoint {endpoint} does not answer as '
                           f'a gRPC server within ')
    assert 'Traceback' not in proc.stderr


def test_a_portable_pipeline_stages_no_list_of_the_submitting_environment(tmp_path):
    """Beam's stager would run `pip freeze` for every pipeline on a portable runner (0.8 s of
    CPU a pipeline); beamcrawl's options leave it out, and only it."""
    from apache_beam.options.pipeline_options import PipelineOptions
    from apache_beam.runners.portability.stager import SUBMISSION_ENV_DEPENDENCIES_FILE, Stager

    from beamcrawl.transforms.runners import portable

    def staged(options):
        folder = tmp_path / str(len(list(tmp_path.iterdir())))
        folder.mkdir()
        Stager.create_job_resources(options, str(folder), log_submission_env_dependencies=True)
        return sorted(p.name for p in folder.iterdir())

    args = ['--runner', 'PortableRunner', '--experiments', 'some_other']
    assert SUBMISSION_ENV_DEPENDENCIES_FILE in staged(PipelineOptions(args))   # Beam's default
    options = PipelineOptions(args)
    portable.skip_submission_environment(options)
    portable.skip_submission_environment(options)                              # idempotent
    assert SUBMISSION_ENV_DEPENDENCIES_FILE not in staged(options)
    assert options.view_as(PipelineOptions).get_all_options()['experiments'] == [
        'some_other', 'disable_logging_submission_environment']
