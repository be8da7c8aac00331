"""Work units: the shares of the input files that the map side of a stage takes one at a time.

A unit is a run of Avro blocks of one input file (or a byte range of a text file), cut in the
driver from block headers alone (storage/container.py `scan_blocks`), so that every worker gets
a similar share however the inputs are split into files.
"""

from typing import Iterator, List, NamedTuple, Optional, Sequence, Tuple

import fastavro
from apache_beam.io.filesystem import CompressionTypes
from apache_beam.io.filesystems import FileSystems

from beamcrawl.transforms.base import compression
from beamcrawl.transforms.base.errors import InputError
from beamcrawl.transforms.storage import container, fs

__all__ = ['Unit', 'avro_units', 'text_units', 'spread', 'read_unit_lines', 'text_size',
           'RECORDS_PER_UNIT', 'BYTES_PER_TEXT_UNIT']

# Work-unit sizes: small enough to share the work evenly between processes, large enough that
# a unit's fixed costs (one task, a spill file per partition) do not count.
RECORDS_PER_UNIT = 50_000
BYTES_PER_TEXT_UNIT = 4 << 20


class Unit(NamedTuple):
    """A share of one input file: Avro blocks (`blocks`: their offsets) or a byte range of a
    text file (`span`: start, end; `first_line`: the number of the range's first line)."""
    index: int
    tag: str                       # which input this is, for the mapper ('old', 'segment', ...)
    path: str
    records: int = 0               # Avro records in the unit (0 for a text unit)
    blocks: Optional[Tuple[int, ...]] = None
    raw_ok: bool = False           # records may be written back as their encoded bytes
    span: Optional[Tuple[int, int]] = None
    first_line: int = 1
    read_from: Optional[str] = None  # a compressed text file's plain copy, which `span` is of

    @property
    def text_bytes(self) -> int:
        """The bytes of a text unit (0 for an Avro unit)."""
        return self.span[1] - self.span[0] if self.span else 0


def avro_units(inputs: Sequence[Tuple[str, str]], *, schema: dict, per_unit: int,
               first_index: int = 0) -> List[Unit]:
    """Units of about `per_unit` records over (tag, path) Avro inputs. `raw_ok` says whether
    a file's records are encoded exactly as `schema` (then unchanged records are copied)."""
    units: List[Unit] = []
    parsed = fastavro.parse_schema(schema)
    index = first_index
    for tag, path in inputs:
        header, blocks = container.scan_blocks(path)
        raw_ok = header.schema == parsed and header.codec in ('null', 'deflate')
        if not blocks:
            continue
        if header.codec not in ('null', 'deflate'):     # read whole by fastavro
            units.append(Unit(index, tag, path, sum(b.count for b in blocks)))
            index += 1
            continue
        run: List[int] = []
        count = 0
        for block in blocks:
            run.append(block.offset)
            count += block.count
            if count >= per_unit:
                units.append(Unit(index, tag, path, count, tuple(run), raw_ok))
                index += 1
                run, count = [], 0
        if run:
            units.append(Unit(index, tag, path, count, tuple(run), raw_ok))
            index += 1
    return units


def spread(units: Sequence[Unit], workers: int) -> List[Unit]:
    """`units`, the largest split in two (by their Avro blocks) until there are at least as many
    as `workers` or none can be split: a stage of few large units would leave workers idle.
    Units are numbered again (their numbers name their spill files)."""
    out = list(units)
    while len(out) < workers:
        splittable = [u for u in out if u.blocks and len(u.blocks) > 1]
        if not splittable:
            break
        unit = max(splittable, key=lambda u: (u.records, -u.index))
        half = len(unit.blocks) // 2
        first = round(unit.records * half / len(unit.blocks))
        at = out.index(unit)
        out[at:at + 1] = [unit._replace(records=first, blocks=unit.blocks[:half]),
                          unit._replace(records=unit.records - first, blocks=unit.blocks[half:])]
    base = min((u.index for u in units), default=0)
    return [u._replace(index=base + i) for i, u in enumerate(out)] if len(out) > len(units) \
        else out


def text_size(path: str) -> int:
    """The size of a compressed text input once decompressed (seeds.txt.gz:
    base/compression.py), every stream of it checked to its end without holding it. Raises
    InputError, naming the file, for a damaged one."""
    try:
        with fs.open_read(path) as f:
            return compression.size(f, compression.kind(path))
    except compression.CompressionError as e:
        raise InputError(f'{path}: {e}') from None


def text_units(inputs: Sequence[Tuple[str, str]], *, per_unit: int, first_index: int = 0,
               scratch: Optional[str] = None) -> List[Unit]:
    """Units of about `per_unit` bytes over (tag, path) text files, cut at line starts; each
    knows the number of its first line (for messages naming file:line).

    A compressed file (seeds.txt.gz) cannot be cut where it is: with a `scratch` directory (the
    stage's working files, removed when it ends), the driver decompresses it once into a plain
    copy there, cut into units as a plain file is; without one, it is one unit, read
    decompressed as a stream."""
    units: List[Unit] = []
    index = first_index
    for number, (tag, path) in enumerate(inputs):
        if compression.kind(path):
            if scratch is None:
                size = text_size(path)
                if size:
                    units.append(Unit(index, tag, path, span=(0, size)))
            else:
                copy = fs.join(scratch, f'text-{number:05d}.txt')
                units += _plain_copy_units(path, copy, tag, per_unit, index)
            index = first_index + len(units)
            continue
        with fs.open_read(path) as f:
            data = fs.read_all(f)
        start, line = 0, 1
        while start < len(data):
            end = data.find(b'\n', min(start + per_unit, len(data)) - 1)
            end = len(data) if end < 0 else end + 1
            units.append(Unit(index, tag, path, span=(start, end), first_line=line))
            line += data.count(b'\n', start, end)
            index += 1
            start = end
    return units


def _plain_copy_units(path: str, copy: str, tag: str, per_unit: int, index: int) -> List[Unit]:
    """Decompresses `path` into the plain file `copy` as a stream, and cuts it into units as
    text_units cuts a plain file (at the first newline from `per_unit` bytes on)."""
    units: List[Unit] = []
    start, first_line, newlines, offset = 0, 1, 0, 0
    try:
        with fs.open_read(path) as raw, fs.create(copy) as out:
            for piece in compression.chunks(raw, compression.kind(path)):
                out.write(piece)
                pos = 0
                while True:
                    look = max(start + per_unit - 1 - offset, pos)
                    nl = piece.find(b'\n', look) if look < len(piece) else -1
                    if nl < 0:
                        newlines += piece.count(b'\n', pos)
                        break
                    newlines += piece.count(b'\n', pos, nl + 1)
                    end = offset + nl + 1
                    units.append(Unit(index + len(units), tag, path, span=(start, end),
                                      first_line=first_line, read_from=copy))
                    first_line, newlines, start, pos = first_line + newlines, 0, end, nl + 1
                offset += len(piece)
    except compression.CompressionError as e:
        raise InputError(f'{path}: {e}') from None
    if offset > start:
        units.append(Unit(index + len(units), tag, path, span=(start, offset),
                          first_line=first_line, read_from=copy))
    return units


def read_unit_lines(unit: Unit) -> Iterator[Tuple[int, bytes]]:
    """(line number, raw line) of a text unit."""
    how = None if unit.read_from else compression.kind(unit.path)
    if how:                         # the whole file, decompressed as it is read
        try:
            with fs.open_read(unit.path) as f:
                yield from enumerate(compression.lines(f, how), unit.first_line)
        except compression.CompressionError as e:
            raise InputError(f'{unit.path}: {e}') from None
        return
    start, end = unit.span
    with FileSystems.open(unit.read_from or unit.path,
                          compression_type=CompressionTypes.UNCOMPRESSED) as f:
        f.seek(start)
        data = f.read(end - start)
    for number, raw in enumerate(data.splitlines(keepends=True), unit.first_line):
        yield number, raw
