"""Configuration: `conf/crawler-default.yaml`, overridden by a site file and by `-D key=value`.

`load_config()` returns a `Config`: an immutable, picklable mapping from key to a type-checked
value. Reading a key that `crawler-default.yaml` does not declare is a programming error
(`KeyError`); setting one is a user error naming the closest declared key.
"""

import dataclasses
import difflib
import functools
import os
import re
import xml.etree.ElementTree as ET
from typing import Any, Dict, Iterable, List, Mapping, Optional, Sequence, Tuple

import yaml

from beamcrawl.transforms.base import compression
from beamcrawl.transforms.base.errors import ConfigError

__all__ = ['Config', 'KeySpec', 'Recorded', 'load_config', 'load_specs', 'bundled_conf_dir',
           'source_tree',
           'read_recorded', 'recorded_text', 'nutch_keys']

_TYPES = ('int', 'float', 'bool', 'str', 'enum', 'list')
_TRUE = {'true', 'yes', 'on', '1'}
_FALSE = {'false', 'no', 'off', '0'}


def source_tree() -> Optional[str]:
    """The top folder of the source tree beamcrawl runs from (the one with setup.py), or None
    for an installed copy."""
    top = os.path.abspath(os.path.join(os.path.dirname(__file__), os.pardir, os.pardir))
    return top if os.path.isfile(os.path.join(top, 'setup.py')) else None


def bundled_conf_dir() -> str:
    """The directory holding crawler-default.yaml and the bundled rule files."""
    tree = source_tree()
    if tree is not None:
        return os.path.join(tree, 'conf')
    import importlib.resources  # installed without the source tree: conf/ is package data
    return str(importlib.resources.files('beamcrawl.conf'))


@dataclasses.dataclass(frozen=True)
class KeySpec:
    """One declared key of crawler-default.yaml."""
    name: str
    group: str
    type: str
    default: Any
    doc: str
    unit: str = ''
    items: str = 'str'
    choices: tuple = ()
    min: Optional[float] = None

    def convert(self, value: Any, source: str) -> Any:
        """Type-checks `value` (a YAML value or a string from XML / -D); raises ConfigError."""
        where = f'{self.name}={value!r} ({source})'
        if self.type == 'list':
            if isinstance(value, str):
                value = [v.strip() for v in value.split(',') if v.strip()]
            if not isinstance(value, (list, tuple)):
                raise ConfigError(f'{where}: expected a list')
            return tuple(_scalar(self.items, v, where) for v in value)
        if self.type == 'enum':
            value = '' if value is None else str(value)
            if value not in self.choices:
                raise ConfigError(f'{where}: expected one of {list(self.choices)}')
            return value
        out = _scalar(self.type, value, where)
        if self.min is not None and out < self.min:
            raise ConfigError(f'{where}: must be at least {self.min}')
        return out


_CONTROL = re.compile(r'[\x00-\x1f\x7f]')


def _scalar(kind: str, value: Any, where: str) -> Any:
    if kind == 'str':
        text = '' if value is None else str(value)
        if _CONTROL.search(text):       # e.g. CR/LF in http.agent.name would split a header
            raise ConfigError(f'{where.split("=", 1)[0]}: control characters (CR, LF, TAB, '
                              f'NUL...) are not allowed in a value')
        return text
    if kind == 'bool':
        if isinstance(value, bool):
            return value
        text = str(value).strip().lower()
        if text in _TRUE:
            return True
        if text in _FALSE:
            return False
        raise ConfigError(f'{where}: expected true or false')
    if isinstance(value, bool):
        raise ConfigError(f'{where}: expected a number')
    try:
        if kind == 'int':
            if isinstance(value, float) and not value.is_integer():
                raise ValueError
            return int(str(value).strip()) if isinstance(value, str) else int(value)
        return float(value)
    except (TypeError, ValueError):
        raise ConfigError(f'{where}: expected {"an integer" if kind == "int" else "a number"}') \
            from None


# PyYAML's loader in C (libyaml) where the wheel has it: the same documents, ten times faster
# (crawler-default.yaml: 3 ms instead of 30, read by every command; docs/performance.md).
_SAFE_LOADER = getattr(yaml, 'CSafeLoader', yaml.SafeLoader)


def _load_yaml(text: str):
    return yaml.load(text, Loader=_SAFE_LOADER)  # noqa: S506  (a safe loader)


def load_specs(path: Optional[str] = None) -> dict:
    """Reads crawler-default.yaml into {key: KeySpec}, checking the file's own consistency."""
    path = path or os.path.join(bundled_conf_dir(), 'crawler-default.yaml')
    with open(path, encoding='utf-8') as f:
        doc = _load_yaml(f.read())
    specs = {}
    for group, entries in doc.items():
        for name, entry in entries.items():
            if entry.get('type') not in _TYPES:
                raise ValueError(f'{path}: {name}: bad type {entry.get("type")!r}')
            spec = KeySpec(
                name=name, group=group, type=entry['type'], default=None,
                doc=' '.join(str(entry.get('doc', '')).split()), unit=entry.get('unit', ''),
                items=entry.get('items', 'str'), choices=tuple(entry.get('choices', ())),
                min=entry.get('min'))
            if not spec.doc:
                raise ValueError(f'{path}: {name}: missing doc')
            specs[name] = dataclasses.replace(
                spec, default=spec.convert(entry['default'], path))
    return specs


class Config(Mapping):
    """Immutable key → value mapping of the effective configuration.

    `conf_dirs` are the directories where rule files named by keys are looked up (the site
    file's directory first, then the bundled conf/).
    """

    def __init__(self, values: Mapping[str, Any], conf_dirs: Sequence[str] = (), *,
                 sources: Optional[Mapping[str, str]] = None,
                 explicit: Optional[Mapping[str, Any]] = None, notes: Sequence[str] = (),
                 rule_dirs: Sequence[str] = ()):
        self._values = dict(values)
        self.conf_dirs = tuple(conf_dirs)
        self.sources = dict(sources or {})    # key -> where its value came from (not default)
        self.explicit = dict(explicit or {})  # keys set by the site file and -D
        self.notes = tuple(notes)             # warnings for the command to log
        self.rule_dirs = tuple(rule_dirs)     # where the site file's rule files are

    def __getitem__(self, key: str) -> Any:
        return self._values[key]

    def __iter__(self):
        return iter(self._values)

    def __len__(self) -> int:
        return len(self._values)

    def __repr__(self) -> str:
        return f'Config({len(self)} keys)'

    def with_overrides(self, **overrides: Any) -> 'Config':
        """A copy with some keys replaced (by their dotted names, passed as a dict)."""
        values = dict(self._values)
        for key, value in overrides.items():
            if key not in values:
                raise KeyError(key)
            values[key] = value
        return Config(values, self.conf_dirs, sources=self.sources, explicit=self.explicit,
                      notes=self.notes, rule_dirs=self.rule_dirs)

    def resource_path(self, key: str) -> Optional[str]:
        """The file named by config key `key`, resolved against conf_dirs; None when empty."""
        name = self[key]
        if not name:
            return None
        if os.path.isabs(name) or '://' in name:
            candidates = [name]
        else:
            candidates = [os.path.join(d, name) for d in self.conf_dirs]
        for candidate in candidates:
            if _exists(candidate):
                return candidate
        raise ConfigError(f'{key}={name}: file not found (looked in {", ".join(self.conf_dirs)})')

    def resource_text(self, key: str) -> Optional[str]:
        """The text of the file named by `key` (None when the key is empty)."""
        path = self.resource_path(key)
        if path is None:
            return None
        try:
            return _read(path).decode('utf-8')
        except compression.CompressionError as e:
            raise ConfigError(f'{key}={path}: {e}') from None
        except (OSError, UnicodeDecodeError) as e:
            raise ConfigError(f'{key}={path}: cannot read ({e})') from None


# Hadoop's own settings, which a nutch-site.xml often carries: ignored like Nutch's keys.
HADOOP_PREFIXES = ('hadoop.', 'mapred.', 'mapreduce.', 'dfs.', 'fs.', 'io.', 'yarn.', 'ipc.')


@functools.lru_cache(maxsize=1)
def nutch_keys() -> frozenset:
    """Property names Apache Nutch knows (conf/nutch-keys.txt)."""
    with open(os.path.join(bundled_conf_dir(), 'nutch-keys.txt'), encoding='utf-8') as f:
        return frozenset(line.strip() for line in f if line.strip() and not line.startswith('#'))


def _is_nutch_key(key: str) -> bool:
    return key in nutch_keys() or key.startswith(HADOOP_PREFIXES)


def _unknown(keys: Sequence[str], specs: Mapping[str, KeySpec], source: str) -> ConfigError:
    """One error naming every unknown key of a source, each with its closest known key."""
    def hint(key):
        close = difflib.get_close_matches(key, list(specs), n=1, cutoff=0.5)
        return f" (did you mean '{close[0]}'?)" if close else ''
    if len(keys) == 1:
        return ConfigError(f"unknown config key '{keys[0]}' in {source}{hint(keys[0])}")
    named = ', '.join(f"'{key}'{hint(key)}" for key in keys)
    return ConfigError(f'{len(keys)} unknown config keys in {source}: {named}')


def _exists(path: str) -> bool:
    """Whether a config file exists: a local path without Beam (a command reads its settings
    before it imports Beam: the fetch's head start, docs/performance.md), else through Beam's
    FileSystems."""
    if '://' not in path:
        return os.path.exists(path)
    from apache_beam.io.filesystems import FileSystems
    return FileSystems.exists(path)


def _read(path: str) -> bytes:
    """A config file's bytes, decompressed when its name says so (site.yaml.gz: base/
    compression.py). Raises OSError, or CompressionError for a damaged compressed file."""
    how = compression.kind(path)
    if '://' not in path:
        f = open(path, 'rb')
    else:
        from apache_beam.io.filesystem import CompressionTypes
        from apache_beam.io.filesystems import FileSystems
        f = FileSystems.open(path, compression_type=CompressionTypes.UNCOMPRESSED)
    with f:
        return compression.read(f, how)


def _read_site(path: str) -> dict:
    """Reads a site file: flat YAML, or a Nutch XML file of <property><name/><value/>."""
    if not _exists(path):
        raise ConfigError(f'config file {path}: not found')
    try:
        raw = _read(path)
    except compression.CompressionError as e:
        raise ConfigError(f'config file {path}: {e}') from None
    except OSError as e:
        raise ConfigError(f'config file {path}: cannot read ({e})') from None
    if raw.lstrip().startswith(b'<'):
        try:
            root = ET.fromstring(raw)
        except ET.ParseError as e:
            raise ConfigError(f'config file {path}: not valid XML ({e})') from None
        values = {}
        for prop in root.iter('property'):
            name = (prop.findtext('name') or '').strip()
            if name:
                values[name] = (prop.findtext('value') or '').strip()
        return values
    try:
        doc = _load_yaml(raw.decode('utf-8'))
    except (yaml.YAMLError, UnicodeDecodeError) as e:
        raise ConfigError(f'config file {path}: not valid YAML ({str(e).splitlines()[0]})') \
            from None
    if doc is None:
        return {}
    if not isinstance(doc, dict):
        raise ConfigError(f'config file {path}: expected a mapping of key: value')
    nested = [str(k) for k, v in doc.items() if isinstance(v, dict)
              or (isinstance(v, list) and any(isinstance(i, (dict, list)) for i in v))]
    if nested:
        raise ConfigError(
            f'config file {path}: must be flat, one `key: value` per line with the full dotted '
            f'key (e.g. `http.agent.name: mybot`); nested under: {", ".join(nested[:5])}')
    return {str(k): v for k, v in doc.items()}


@dataclasses.dataclass(frozen=True)
class Recorded:
    """The site settings a crawl directory recorded when it was created (docs/crawl-dir.md,
    "Site settings"): key -> value, and the directories its rule files were looked up in."""
    path: str
    settings: Mapping[str, Any]
    rule_dirs: Tuple[str, ...] = ()


RECORD_HEADER = """\
# The site settings of this crawl directory, recorded by `beamcrawl {command}` on {when}.
# Every command on this crawl directory applies them; --conf, BEAMCRAWL_CONF and -D still win
# for one command (with a warning when they differ). `beamcrawl config CRAWL_DIR` shows the
# effective value of every key; `beamcrawl config CRAWL_DIR --save [--conf FILE] [-D k=v]`
# records new values. See docs/crawl-dir.md, "Site settings".
"""


def read_recorded(path: str) -> Optional[Recorded]:
    """The crawl directory's recorded settings (None when it has none)."""
    if not _exists(path):
        return None
    try:
        raw = _read(path)
    except (OSError, compression.CompressionError) as e:
        raise ConfigError(f'{path}: cannot read ({e})') from None
    try:
        doc = _load_yaml(raw.decode('utf-8')) or {}
    except (yaml.YAMLError, UnicodeDecodeError) as e:
        raise ConfigError(f'{path}: not valid YAML ({str(e).splitlines()[0]}): fix or remove '
                          f'it') from None
    settings = doc.get('settings') if isinstance(doc, dict) else None
    dirs = doc.get('rule_dirs') if isinstance(doc, dict) else None
    if not isinstance(settings, dict) or not isinstance(dirs or [], list):
        raise ConfigError(f'{path}: expected `settings:` (key: value) and `rule_dirs:` (a list)')
    return Recorded(path, {str(k): v for k, v in settings.items()},
                    tuple(str(d) for d in dirs or ()))


def recorded_text(cfg: 'Config', command: str, when: str) -> bytes:
    """The text of a crawl directory's record of `cfg`'s site settings (its `explicit` keys)."""
    def plain(value):
        return list(value) if isinstance(value, tuple) else value
    body = yaml.safe_dump({'rule_dirs': list(cfg.rule_dirs),
                           'settings': {k: plain(v) for k, v in sorted(cfg.explicit.items())}},
                          sort_keys=False, allow_unicode=True, default_flow_style=False)
    return (RECORD_HEADER.format(command=command, when=when) + body).encode('utf-8')


def load_config(site: Optional[str] = None, defines: Iterable[str] = (),
                overrides: Optional[Mapping[str, Any]] = None, *,
                recorded: Optional[Recorded] = None, site_label: str = 'config file') -> Config:
    """The effective configuration: defaults < the crawl directory's `recorded` settings < site
    file < `-D key=value` < `overrides`.

    Keys that Nutch (or Hadoop) knows and beamcrawl does not use are ignored, all named in one
    note; unknown keys are one error naming them all. `overrides` is for tests and programs;
    its values are type-checked like the others. The returned Config says where each value
    came from (`sources`), which keys the site file and -D set (`explicit`), and what the
    command should warn about (`notes`).
    """
    specs = load_specs()
    values = {name: spec.default for name, spec in specs.items()}
    sources: Dict[str, str] = {}
    notes: List[str] = []
    layers = []
    if recorded is not None:
        layers.append((f'crawl dir {recorded.path}', dict(recorded.settings), 'recorded'))
    if site:
        layers.append((f'{site_label} {site}', _read_site(site), 'explicit'))
    parsed = {}
    for define in defines:
        key, sep, value = define.partition('=')
        if not sep or not key.strip():
            raise ConfigError(f"-D {define}: expected key=value")
        parsed[key.strip()] = value.strip()
    layers.append(('-D', parsed, 'explicit'))
    layers.append(('overrides', dict(overrides or {}), 'program'))
    explicit: Dict[str, Any] = {}           # set by the site file or -D
    kept: Dict[str, Any] = {}               # recorded in the crawl directory
    for source, layer, kind in layers:
        unknown = [k for k in layer if k not in specs and not _is_nutch_key(k)]
        if unknown and kind != 'recorded':
            raise _unknown(unknown, specs, source)
        ignored = sorted(k for k in layer if k not in specs)
        if ignored:
            what = ('keys of Nutch or Hadoop that beamcrawl does not use' if kind != 'recorded'
                    else 'keys this version of beamcrawl does not know')
            notes.append(f'{source}: {len(ignored)} {what}, ignored: {", ".join(ignored)}')
        for key, value in layer.items():
            if key in specs:
                values[key] = specs[key].convert(value, source)
                sources[key] = source
                if kind == 'explicit':
                    explicit[key] = values[key]
                elif kind == 'recorded':
                    kept[key] = values[key]
    for key, value in explicit.items():
        if key in kept and kept[key] != value:
            notes.append(f'{key}={_show(value)} ({sources[key]}) differs from {_show(kept[key])} '
                         f'recorded in {recorded.path}: used for this command only')
    rule_dirs = [os.path.dirname(os.path.abspath(site))] if site and '://' not in site else []
    recorded_dirs = list(recorded.rule_dirs) if recorded else []
    conf_dirs = rule_dirs + [d for d in recorded_dirs if d not in rule_dirs]
    conf_dirs.append(bundled_conf_dir())
    return Config(values, conf_dirs, sources=sources, explicit=explicit, notes=notes,
                  rule_dirs=rule_dirs or recorded_dirs)


def _show(value: Any) -> str:
    return ','.join(map(str, value)) if isinstance(value, tuple) else repr(value)
