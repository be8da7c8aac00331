"""Policy modules are plain Python: importing them must not import Beam."""

import os
import subprocess
import sys

from tests.conftest import ROOT

POLICY_DIR = os.path.join(ROOT, 'transforms', 'policy')


def test_policy_modules_do_not_import_beam():
    modules = [f'beamcrawl.transforms.policy.{n[:-3]}' for n in sorted(os.listdir(POLICY_DIR))
               if n.endswith('.py') and n != '__init__.py']
    assert modules
    code = ('import sys\n'
            + ''.join(f'import {m}\n' for m in modules)
            + 'bad = [m for m in sys.modules if m.split(".")[0] == "apache_beam"]\n'
            + 'print(",".join(bad))\n')
    out = subprocess.run([sys.executable, '-c', code], cwd=ROOT, capture_output=True,
                         text=True, check=True).stdout.strip()
    assert out == '', f'policy modules pulled in Beam: {out}'
