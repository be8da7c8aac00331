"""Building SeaweedFS's `weed` for beamcrawl's local S3-compatible store (runners/locals3.py),
once per user, in a cache folder every checkout and every store home shares: BEAMCRAWL_S3_BUILD,
else <XDG_CACHE_HOME, else ~/.cache>/beamcrawl/seaweedfs. A fresh clone (CI's) or a work tree
laid anew builds nothing again.

  go/              the Go caches of the build (GOPATH, GOMODCACHE go/pkg/mod, GOCACHE
                   go/cache): 3.9 GB, kept so that a rebuild (another SEAWEEDFS_VERSION) is
                   quicker; removing them only costs that rebuild its minutes
  bin/weed-<v>     the binary (164 MB, symbols stripped), and build.log

Why from source: SeaweedFS (Apache-2.0; MinIO would be AGPL) ships no binary on a registry
these machines reach, and `go install github.com/seaweedfs/seaweedfs/weed@VERSION` is refused
(its go.mod has a replace directive). The Go module proxy serves the module's source all the
same: `go mod download` fetches it into the module cache, and `go build ./weed` run inside that
copy builds the binary with the module's own go.mod and go.sum (every dependency from the proxy,
checked against go.sum). About 6 minutes on 2 cores, once.
"""

import json
import logging
import os
import shutil
import subprocess
from typing import Dict, Optional

from beamcrawl.transforms.base.errors import UserError
from beamcrawl.transforms.runners.services import building

__all__ = ['S3Build', 'SEAWEEDFS_MODULE', 'SEAWEEDFS_VERSION', 'default_build_dir']

log = logging.getLogger('beamcrawl')

SEAWEEDFS_MODULE = 'github.com/seaweedfs/seaweedfs'
# A pseudo-version: SeaweedFS tags its releases as 3.x without a /v3 module path, so the Go
# module proxy serves its commits under pseudo-versions only. This one is from November 2026.
SEAWEEDFS_VERSION = 'v0.0.0-20261109003541-7506e5f91cd6'


def default_build_dir() -> str:
    """BEAMCRAWL_S3_BUILD; else the user's cache folder's beamcrawl/seaweedfs."""
    if os.environ.get('BEAMCRAWL_S3_BUILD'):
        return os.path.abspath(os.environ['BEAMCRAWL_S3_BUILD'])
    cache = os.environ.get('XDG_CACHE_HOME') or os.path.join(os.path.expanduser('~'), '.cache')
    return os.path.join(cache, 'beamcrawl', 'seaweedfs')


class S3Build:
    """The built parts of SeaweedFS in the folder `where`: the Go caches, the `weed` binary."""

    def __init__(self, where: Optional[str] = None):
        self.home = os.path.abspath(where or default_build_dir())
        self.go_dir = os.path.join(self.home, 'go')
        self.binary = os.path.join(self.home, 'bin',
                                   f'weed-{SEAWEEDFS_VERSION.rsplit("-", 1)[-1]}')
        self.build_log = os.path.join(self.home, 'bin', 'build.log')

    def built(self) -> bool:
        return os.access(self.binary, os.X_OK)

    def prepare(self) -> None:
        """Builds the binary, once (under a lock: two processes build it once)."""
        if self.built():
            return
        with building(self.home):
            if not self.built():
                self._build()

    def go_env(self) -> Dict[str, str]:
        """The environment of every go command of the build: caches in the home, the module
        cache writable (so that `rm -rf` removes it), this machine's Go only (no toolchain
        download), the Go module proxy the machine is configured with."""
        env = dict(os.environ)
        env.update(GOPATH=self.go_dir, GOMODCACHE=os.path.join(self.go_dir, 'pkg', 'mod'),
                   GOCACHE=os.path.join(self.go_dir, 'cache'), GOTOOLCHAIN='local',
                   GOFLAGS='-modcacherw -buildvcs=false', CGO_ENABLED='0')
        return env

    def _build(self) -> None:
        go = shutil.which('go')
        if go is None:
            raise UserError('Go 1.26 or newer is needed once to build SeaweedFS: `go` is not on '
                            'PATH (Debian: apt-get install golang-go, if its Go is new enough)')
        os.makedirs(os.path.dirname(self.binary), exist_ok=True)
        env = self.go_env()
        log.info('s3: building SeaweedFS %s from the Go module proxy (once per user; 4 to 6 '
                 'minutes and 3.9 GB of Go caches in %s; log in %s)', SEAWEEDFS_VERSION,
                 self.go_dir, self.build_log)
        with open(self.build_log, 'w', encoding='utf-8') as out:
            proc = subprocess.run([go, 'mod', 'download', '-json',
                                   f'{SEAWEEDFS_MODULE}@{SEAWEEDFS_VERSION}'],
                                  env=env, cwd=self.home, capture_output=True, text=True)
            out.write(proc.stdout + proc.stderr)
            try:
                source = json.loads(proc.stdout)['Dir']
            except (ValueError, KeyError):
                source = None
            if proc.returncode != 0 or not source or not os.path.isdir(source):
                raise UserError(f'downloading the SeaweedFS source from the Go module proxy '
                                f'failed (exit {proc.returncode}); see {self.build_log}')
            out.flush()
            partial = self.binary + '.partial'
            code = subprocess.call([go, 'build', '-trimpath', '-ldflags', '-s -w', '-o', partial,
                                    './weed'], env=env, cwd=source, stdout=out,
                                   stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
        if code != 0 or not os.path.isfile(partial):
            raise UserError(f'building SeaweedFS with `go build` failed (exit {code}); see '
                            f'{self.build_log}')
        os.replace(partial, self.binary)
