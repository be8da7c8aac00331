"""`linkdb`: the alias of `invertlinks` (pipelines/invertlinks.py), so that
`python -m beamcrawl.pipelines.linkdb ...` keeps working as `beamcrawl linkdb ...` does."""

import sys

from beamcrawl.pipelines.cli import run_command
from beamcrawl.pipelines.invertlinks import add_arguments, run  # noqa: F401  (the command's)

if __name__ == '__main__':
    sys.exit(run_command('invertlinks', sys.argv[1:]))
