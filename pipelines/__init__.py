"""beamcrawl's pipelines: one thin module per command (see pipelines/cli.py).

A command module imports what its pipeline needs (Beam, transforms) inside its functions, not at
the top: `beamcrawl <command> --help` then answers in 0.03 s instead of paying Beam's import
(0.4 s) first.
"""

from beamcrawl.transforms.runners.logs import install_filters

install_filters()       # before Beam is imported and warns
