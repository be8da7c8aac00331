"""The driver's small reads of Avro part files, without Beam (a command on a local crawl
directory reads its input's size before Beam is imported: the fetch's head start,
docs/performance.md)."""

from typing import Any, Dict, Iterator, List

import fastavro

from beamcrawl.transforms.storage import container, fs

__all__ = ['Record', 'check_avro_files', 'count_records', 'iter_records']

Record = Dict[str, Any]        # a record as Beam's Avro IO reads it: a dict in its schema's shape


def check_avro_files(paths: List[str]) -> None:
    """Fails fast, naming the file, when a part is not a readable Avro file."""
    for path in paths:
        container.check_regular(path)
        try:
            with fs.open_read(path) as f:
                reader = fastavro.reader(f)
                next(iter(reader), None)
        except Exception as e:  # pylint: disable=broad-except  (any decoder error means corrupt)
            raise container.unreadable(path, e) from None


def count_records(paths: List[str]) -> int:
    """How many records some Avro files hold, from their block headers (nothing is decoded or
    decompressed). A file that is not a regular, readable Avro file is an InputError naming it."""
    total = 0
    for path in paths:
        container.check_regular(path)
        total += sum(block.count for block in container.scan_blocks(path)[1])
    return total


def iter_records(paths: List[str]) -> Iterator[dict]:
    """Records of Avro part files, read in the driver (small reads: lookups, scratch output).
    A file that is not a regular, readable Avro file is an InputError naming it."""
    for path in paths:
        container.check_regular(path)
        try:
            with fs.open_read(path) as f:
                yield from fastavro.reader(f)
        except Exception as e:  # pylint: disable=broad-except  (any decoder error means corrupt)
            raise container.unreadable(path, e) from None
