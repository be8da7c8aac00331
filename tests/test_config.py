"""Config loading, precedence, type checks, and the declared-vs-read key audit."""

import ast
import os

import pytest

from beamcrawl.transforms.base.config import load_config, load_specs
from beamcrawl.transforms.base.errors import ConfigError

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
CODE_DIRS = ('pipelines', 'transforms')


def test_defaults_load_with_types():
    cfg = load_config()
    assert cfg['db.fetch.interval.default'] == 2592000
    assert cfg['db.score.injected'] == 1.0
    assert cfg['db.injector.overwrite'] is False
    assert cfg['urlfilter.scheme.allowed'] == ('http', 'https')
    assert cfg['domain.extra.suffixes'] == ()


def test_every_entry_documents_itself():
    for spec in load_specs().values():
        assert spec.doc and spec.group, spec.name


def test_precedence_default_site_define(tmp_path):
    site = tmp_path / 'site.yaml'
    site.write_text('db.score.injected: 2.5\ndb.fetch.interval.default: 100\n')
    cfg = load_config(str(site), ['db.score.injected=3'])
    assert cfg['db.score.injected'] == 3.0         # -D wins over the site file
    assert cfg['db.fetch.interval.default'] == 100  # site wins over the default


@pytest.mark.parametrize('suffix, opener', [('.gz', 'gzip'), ('.bz2', 'bz2'), ('.xz', 'lzma')])
def test_a_compressed_site_file_is_read_decompressed(tmp_path, suffix, opener):
    """A site file whose name ends in a compression suffix is read decompressed, as Beam's
    filesystems read it (a local plain one is read without Beam), from the command line too."""
    import importlib
    import json

    from tests.conftest import run_cli
    site = tmp_path / ('site.yaml' + suffix)
    module = importlib.import_module(opener)
    with module.open(site, 'wb') as f:
        f.write(b'db.score.injected: 2.5\nurlfilter.regex.file: my-filter.txt' +
                suffix.encode() + b'\n')
    with module.open(tmp_path / ('my-filter.txt' + suffix), 'wb') as f:
        f.write(b'-^http://a\\.test/\n+.\n')
    cfg = load_config(str(site))
    assert cfg['db.score.injected'] == 2.5
    assert cfg.resource_text('urlfilter.regex.file') == '-^http://a\\.test/\n+.\n'
    out = json.loads(run_cli('config', '--json', '--conf', str(site)).stdout)
    assert out['db.score.injected'] == {'value': 2.5, 'source': f'config file {site}'}


def test_a_damaged_compressed_site_or_rule_file_is_a_one_line_error(tmp_path):
    import gzip

    from tests.conftest import run_cli
    site = tmp_path / 'site.yaml.gz'
    site.write_bytes(gzip.compress(b'db.score.injected: 2.5\n')[:-9])    # the trailer cut
    proc = run_cli('config', '--conf', str(site), check=False)
    assert proc.returncode == 2 and 'Traceback' not in proc.stderr
    assert proc.stderr.strip() == (f'beamcrawl config: config file {site}: not a readable gzip '
                                   'file (it ends in the middle of a stream: cut short?)')
    rules = tmp_path / 'rules.txt.gz'
    rules.write_bytes(b'+.\n')                                          # not gzip at all
    cfg = load_config(defines=[f'urlfilter.regex.file={rules}'])
    with pytest.raises(ConfigError) as raised:
        cfg.resource_text('urlfilter.regex.file')
    assert str(raised.value).startswith(f'urlfilter.regex.file={rules}: not a readable gzip file (')


def test_nutch_site_xml(tmp_path):
    site = tmp_path / 'nutch-site.xml'
    site.write_text('<?xml version="1.0"?><configuration>'
                    '<property><name>db.injector.update</name><value>true</value></property>'
                    '<property><name>domain.extra.suffixes</name><value>test, corp</value>'
                    '</property></configuration>')
    cfg = load_config(str(site))
    assert cfg['db.injector.update'] is True
    assert cfg['domain.extra.suffixes'] == ('test', 'corp')


@pytest.mark.parametrize('define,message', [
    ('db.score.injectd=2', "unknown config key 'db.score.injectd' in -D (did you mean "
                           "'db.score.injected'?)"),
    ('db.fetch.interval.default=abc', 'expected an integer'),
    ('db.fetch.interval.default=0', 'must be at least 1'),
    ('db.injector.update=maybe', 'expected true or false'),
    ('urlnormalizer.basic.host.idn=toascii', 'expected one of'),
    ('no-equals-sign', 'expected key=value'),
])
def test_bad_values_are_config_errors(define, message):
    with pytest.raises(ConfigError) as e:
        load_config(defines=[define])
    assert message in str(e.value)


def test_bad_site_files(tmp_path):
    with pytest.raises(ConfigError, match='not found'):
        load_config(str(tmp_path / 'missing.yaml'))
    bad = tmp_path / 'bad.yaml'
    bad.write_text('a: [\n')
    with pytest.raises(ConfigError, match='not valid YAML'):
        load_config(str(bad))
    unknown = tmp_path / 'unknown.yaml'
    unknown.write_text('http.agent.nam: x\n')
    with pytest.raises(ConfigError, match="unknown config key 'http.agent.nam' in config file"):
        load_config(str(unknown))


def test_rule_files_resolve_beside_site_file_first(tmp_path):
    (tmp_path / 'my-filter.txt').write_text('+.\n')
    site = tmp_path / 'site.yaml'
    site.write_text('urlfilter.regex.file: my-filter.txt\n')
    cfg = load_config(str(site))
    assert cfg.resource_text('urlfilter.regex.file') == '+.\n'
    assert 'regex-normalize' in cfg.resource_text('urlnormalizer.regex.file')
    with pytest.raises(ConfigError, match='file not found'):
        load_config(defines=['urlfilter.regex.file=nope.txt']).resource_text(
            'urlfilter.regex.file')


def _keys_read_in_code():
    """String keys used as `cfg[...]` subscripts anywhere in the code."""
    read = {}
    for top in CODE_DIRS:
        for dirpath, _, files in os.walk(os.path.join(ROOT, top)):
            for name in files:
                if not name.endswith('.py'):
                    continue
                path = os.path.join(dirpath, name)
                with open(path, encoding='utf-8') as f:
                    tree = ast.parse(f.read(), path)
                for node in ast.walk(tree):
                    if (isinstance(node, ast.Subscript) and isinstance(node.value, ast.Name)
                            and node.value.id == 'cfg' and isinstance(node.slice, ast.Constant)
                            and isinstance(node.slice.value, str)):
                        read.setdefault(node.slice.value, path)
                    if (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
                            and node.func.attr in ('resource_text', 'resource_path')
                            and node.args and isinstance(node.args[0], ast.Constant)):
                        read.setdefault(node.args[0].value, path)
    return read


def test_code_reads_only_declared_keys_and_every_declared_key_is_read():
    declared = set(load_specs())
    read = _keys_read_in_code()
    undeclared = {k: v for k, v in read.items() if k not in declared}
    assert not undeclared, f'code reads keys missing from crawler-default.yaml: {undeclared}'
    unused = declared - set(read)
    assert not unused, f'crawler-default.yaml declares keys nothing reads: {sorted(unused)}'


def test_reading_an_undeclared_key_fails():
    with pytest.raises(KeyError):
        load_config()['no.such.key']
