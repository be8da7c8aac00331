"""Configuration: `conf/crawler-default.yaml`, overridden by a site file and by `-D key=value`.

`load_config()` returns a `Config`: an immutable, picklable mapping from key to a type-checked
value. Reading a key that `crawler-default.yaml` does not declare is a programming error
(`KeyError`); setting one is a user error naming the closest declared key.
"""

import dataclasses
import difflib
import os
import re
import xml.etree.ElementTree as ET
from typing import Any, Iterable, Mapping, Optional, Sequence

import yaml
from apache_beam.io.filesystems import FileSystems

from beamcrawl.transforms.errors import ConfigError

__all__ = ['Config', 'KeySpec', 'load_config', 'load_specs', 'bundled_conf_dir']

_TYPES = ('int', 'float', 'bool', 'str', 'enum', 'list')
_TRUE = {'true', 'yes', 'on', '1'}
_FALSE = {'false', 'no', 'off', '0'}


def bundled_conf_dir() -> str:
    """The directory holding crawler-default.yaml and the bundled rule files."""
    here = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), 'conf')
    if os.path.isfile(os.path.join(here, 'crawler-default.yaml')):
        return here
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


def load_specs(path: Optional[str] = None) -> dict:
    """Reads crawler-default.yaml into {key: KeySpec}, checking the file's own consistency."""
    path = path or os.path.join(bundled_conf_dir(), 'crawler-default.yaml')
    with open(path, encoding='utf-8') as f:
        doc = yaml.safe_load(f)
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

    def __init__(self, values: Mapping[str, Any], conf_dirs: Sequence[str] = ()):
        self._values = dict(values)
        self.conf_dirs = tuple(conf_dirs)

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
        return Config(values, self.conf_dirs)

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
            if FileSystems.exists(candidate):
                return candidate
        raise ConfigError(f'{key}={name}: file not found (looked in {", ".join(self.conf_dirs)})')

    def resource_text(self, key: str) -> Optional[str]:
        """The text of the file named by `key` (None when the key is empty)."""
        path = self.resource_path(key)
        if path is None:
            return None
        with FileSystems.open(path) as f:
            return f.read().decode('utf-8')


def _unknown(key: str, specs: Mapping[str, KeySpec], source: str) -> ConfigError:
    close = difflib.get_close_matches(key, list(specs), n=1, cutoff=0.5)
    hint = f" (did you mean '{close[0]}'?)" if close else ''
    return ConfigError(f"unknown config key '{key}' in {source}{hint}")


def _read_site(path: str) -> dict:
    """Reads a site file: flat YAML, or a Nutch XML file of <property><name/><value/>."""
    if not FileSystems.exists(path):
        raise ConfigError(f'config file {path}: not found')
    try:
        with FileSystems.open(path) as f:
            raw = f.read()
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
        doc = yaml.safe_load(raw.decode('utf-8'))
    except (yaml.YAMLError, UnicodeDecodeError) as e:
        raise ConfigError(f'config file {path}: not valid YAML ({str(e).splitlines()[0]})') \
            from None
    if doc is None:
        return {}
    if not isinstance(doc, dict):
        raise ConfigError(f'config file {path}: expected a mapping of key: value')
    return doc


def load_config(site: Optional[str] = None, defines: Iterable[str] = (),
                overrides: Optional[Mapping[str, Any]] = None) -> Config:
    """The effective configuration: defaults < site file < `-D key=value` < `overrides`.

    `overrides` is for tests and programs; its values are type-checked like the others.
    """
    specs = load_specs()
    values = {name: spec.default for name, spec in specs.items()}
    layers = []
    if site:
        layers.append((f'config file {site}', _read_site(site)))
    parsed = {}
    for define in defines:
        key, sep, value = define.partition('=')
        if not sep or not key.strip():
            raise ConfigError(f"-D {define}: expected key=value")
        parsed[key.strip()] = value.strip()
    layers.append(('-D', parsed))
    layers.append(('overrides', dict(overrides or {})))
    for source, layer in layers:
        for key, value in layer.items():
            if key not in specs:
                raise _unknown(key, specs, source)
            values[key] = specs[key].convert(value, source)
    conf_dirs = [os.path.dirname(os.path.abspath(site))] if site and '://' not in site else []
    conf_dirs.append(bundled_conf_dir())
    return Config(values, conf_dirs)
