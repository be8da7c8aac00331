"""How a Beam SDK worker of a Flink cluster starts: what Beam's container boot program does, for a
worker that runs in this Python environment (no container, no staged artifacts).

`python -m beamcrawl.transforms.runners.sdkboot --id=ID --provision_endpoint=HOST:PORT
--control_endpoint=HOST:PORT --logging_endpoint=HOST:PORT [--artifact_endpoint=...]` asks the
runner's provision service for the pipeline's options, then runs Beam's SDK worker with them.
Beam's own worker pool starts a worker without any options, so a worker's FileSystems had none
either: a crawl directory on HDFS or S3 was unreachable from the workers. Both ways a Flink
TaskManager starts workers use this program: the worker pool (runners/workerpool.py, EXTERNAL
environments) and the TaskManager itself (PROCESS environments, one per TaskManager: `beamcrawl
flink start --taskmanagers N`).
"""

import argparse
import json
import os
import sys
from typing import List, Optional

__all__ = ['main', 'boot_script']


def boot_script(path: str, python: str = sys.executable) -> str:
    """Writes an executable script at `path` that runs this program with `python` (Beam starts
    a worker by an executable's path, without arguments of its own); returns `path`."""
    import shlex
    text = f'#!/bin/sh\nexec {shlex.quote(python)} -m beamcrawl.transforms.runners.sdkboot "$@"\n'
    os.makedirs(os.path.dirname(path) or '.', exist_ok=True)
    aside = f'{path}.{os.getpid()}'
    with open(aside, 'w', encoding='utf-8') as f:
        f.write(text)
    os.chmod(aside, 0o755)
    os.replace(aside, path)
    return path


def main(argv: Optional[List[str]] = None) -> int:
    parser = argparse.ArgumentParser(prog='sdkboot')
    for name in ('id', 'provision_endpoint', 'control_endpoint', 'logging_endpoint',
                 'artifact_endpoint', 'semi_persist_dir'):
        parser.add_argument(f'--{name}', default='')
    args, _ = parser.parse_known_args(argv)
    import grpc
    from apache_beam.portability.api import (beam_provision_api_pb2, beam_provision_api_pb2_grpc,
                                             endpoints_pb2)
    from google.protobuf import json_format, text_format
    channel = grpc.insecure_channel(args.provision_endpoint)
    try:
        info = beam_provision_api_pb2_grpc.ProvisionServiceStub(channel).GetProvisionInfo(
            beam_provision_api_pb2.GetProvisionInfoRequest(),
            metadata=[('worker_id', args.id)]).info
    finally:
        channel.close()

    def descriptor(url: str, given) -> str:
        return text_format.MessageToString(
            given if given.url else endpoints_pb2.ApiServiceDescriptor(url=url))

    options = json.loads(json_format.MessageToJson(info.pipeline_options))
    os.environ.update({
        'WORKER_ID': args.id,
        'PIPELINE_OPTIONS': json.dumps({'options': _plain(options)}),
        'CONTROL_API_SERVICE_DESCRIPTOR': descriptor(args.control_endpoint,
                                                     info.control_endpoint),
        'LOGGING_API_SERVICE_DESCRIPTOR': descriptor(args.logging_endpoint,
                                                     info.logging_endpoint),
        'RUNNER_CAPABILITIES': ' '.join(info.runner_capabilities)})
    # The worker pool reads nothing of a worker's standard output: what a worker prints goes to
    # its error output (the pool's or the TaskManager's log), not into a pipe that fills up.
    sys.stdout = sys.stderr
    from apache_beam.runners.worker import sdk_worker_main

    from beamcrawl.transforms.runners.dofnspecs import remember_dofn_specs
    from beamcrawl.transforms.runners.sampler import prompt_state_sampler
    prompt_state_sampler()
    remember_dofn_specs()
    sdk_worker_main.main([])
    return 0


def _plain(options: dict) -> dict:
    """Pipeline options as the runner sends them (beam:option:NAME:v1 → value) by name."""
    out = {}
    for key, value in options.items():
        if key.startswith('beam:option:') and key.endswith(':v1'):
            key = key[len('beam:option:'):-len(':v1')]
        out[key] = value
    return out


if __name__ == '__main__':
    sys.exit(main())
