"""beamcrawl's pipelines: one thin module per command (see pipelines/cli.py)."""

import logging


class _DropBeamImportNoise(logging.Filter):
    """Beam warns at import time about optional Google Cloud libraries beamcrawl does not use."""

    def filter(self, record):
        return not str(record.msg).startswith('apitools not found')


logging.getLogger().addFilter(_DropBeamImportNoise())
