"""The two sides of a stage on the engine: a Mapper (records of a unit to (url, item) pairs) and a
Reducer (a partition's groups to a part file); JoinReducer merges with the old database."""

import io
from typing import Dict, Iterable, Iterator, List, Optional, Sequence, Tuple

import fastavro

from beamcrawl.transforms.engine.joins import (Entry, Unsorted, join_keyed, join_sorted,
                                               strictly_sorted)
from beamcrawl.transforms.engine.units import Unit
from beamcrawl.transforms.engine.items import OLD_RAW
from beamcrawl.transforms.storage import container, datumruns, keysfile, native, partwriter

__all__ = ['Mapper', 'Reducer', 'JoinReducer']


class Mapper:
    """The map side of a stage: `map(unit, counts)` yields (url, item) for the records of a
    unit (counts: a metrics.BundleCounts)."""

    def map(self, unit: Unit, counts) -> Iterable[Tuple[str, object]]:
        raise NotImplementedError


class Reducer:
    """The reduce side: `reduce(partition, groups, path, counts)` writes the part file `path`
    from groups {url: [items]} (items in input order: units in index order)."""

    def reduce(self, index: int, groups: Dict[str, list], path: str, counts) -> None:
        raise NotImplementedError


class JoinReducer(Reducer):
    """A Reducer that merges a partition's groups with the same partition of the old database
    when that one is partitioned the same way (`old_parts`): the old part is streamed in one
    pass beside the sorted groups (`write_joined`), never mapped; with its keys file
    (keysfile.read_keyed), the old records that nothing changes are not even decoded.
    Without an old part, or when it turns out not to be sorted, the old records go into the
    groups (`old_items`) and the partition is written from them (`write_grouped`). Parts are
    written sorted by URL, with their keys files."""

    schema: dict = None

    def __init__(self, old_parts: Optional[Dict[int, str]] = None):
        self.old_parts = old_parts or {}

    def complete(self, record: dict) -> dict:
        """A record of an old file with another schema, with every field of ours."""
        return record

    def decode(self, raw: bytes) -> dict:
        """An old record from its encoded bytes (the database's own schema)."""
        return fastavro.schemaless_reader(io.BytesIO(raw), self._parsed())

    def _parsed(self):
        parsed = self.__dict__.get('_parsed_schema')
        if parsed is None:
            parsed = self._parsed_schema = fastavro.parse_schema(self.schema)
        return parsed

    def old_items(self, record: dict, raw: Optional[bytes], counts
                  ) -> Iterable[Tuple[str, object]]:
        raise NotImplementedError

    def write_joined(self, joined, out: partwriter.PartWriter, counts) -> None:
        """Writes the partition from join_sorted's tuples; `record` may be None where `raw` is
        there (decode it when it is needed)."""
        raise NotImplementedError

    def write_grouped(self, groups: Dict[str, list], out: partwriter.PartWriter,
                      counts) -> None:
        raise NotImplementedError

    def copies_unchanged(self, statuses: Sequence[str]) -> bool:
        """Whether write_joined would write every old record that no group names as its bytes,
        unchanged, in a part whose records have these statuses. When it would, and the old
        part has its keys file, the join copies such records itself, a run at a time
        (join_keyed), and write_joined sees only the entries with a group."""
        return False

    def count_copied(self, copied: Dict[str, int], counts) -> None:
        """Counts the records the join copied ({status: number}), as write_joined would have."""

    def _old_entries(self, path: str, raw_ok: bool) -> Iterator[Entry]:
        keyed = keysfile.read_keyed(path) if raw_ok else None
        if keyed is not None:
            for url, status, raw in keyed:
                yield url, status, raw, None
            return
        for record in self._old_records(path, raw_ok):
            yield record[0]['url'], record[0].get('status'), record[1], record[0]

    def _old_records(self, path: str, raw_ok: bool):
        for record, raw in container.read_records(path, with_raw=raw_ok):
            yield (record, raw) if raw_ok and raw is not None else (self.complete(record), None)

    def decide_joined(self, joined, counts) -> Optional[list]:
        """For the join of a part with its keys (join_keyed's tuples, one per URL with a
        group): what the partition holds for each of those URLs, None (nothing) or (its
        record's bytes, status) or (its record, status). A reducer that has this (the base
        class has not: None) gets its partitions merged in C (storage/_datums.c `merge`)
        instead of written by write_joined, which must decide the same."""
        return None

    def _join_copying(self, part, groups, path, counts, blocks=None) -> None:
        """Writes the partition by join_keyed: the old records that no group names copied a
        run at a time, and counted by status."""
        if native.codec is not None and \
                type(self).decide_joined is not JoinReducer.decide_joined:
            self._join_merging(part, groups, path, counts, blocks)
            return
        copied = bytearray()
        with partwriter.PartWriter(path, self.schema, keys=True) as out:
            self.write_joined(join_keyed(part, groups, out, copied, blocks), out, counts)
        by_status = {status: copied.count(i) for i, status in enumerate(part.keys.statuses)}
        self.count_copied({s: n for s, n in by_status.items() if n}, counts)

    def _join_merging(self, part, groups, path, counts, blocks=None) -> None:
        """_join_copying with the merge in C: the URLs with a group are looked up among the
        part's (storage/_datums.c `lookup`), decide_joined says what each becomes, and `merge`
        puts those records in the place of the part's (or where they go), copying the others
        as they are; the part is written from that at once (PartWriter.write_run)."""
        keys = part.keys
        data = b''.join(d for _, _, d in (keysfile.keyed_blocks(part) if blocks is None
                                          else blocks))
        new = sorted(groups)
        statuses = keys.statuses
        joined, at, matched = native.codec.join(keys.urls, list(statuses), keys.status_index,
                                                keys.lengths, data, new, groups)
        decisions = self.decide_joined(joined, counts)
        table = {status: i for i, status in enumerate(statuses)}
        out_statuses = list(statuses)
        raws, status_index = [], bytearray()
        with partwriter.PartWriter(path, self.schema, keys=True) as out:
            for decision in decisions:
                if decision is None:
                    raws.append(None)
                    status_index.append(0)
                    continue
                raw, status = decision
                if raw.__class__ is dict:
                    raw = out.encode(raw)
                raws.append(raw)
                i = table.get(status)
                if i is None:
                    i = table[status] = len(out_statuses)
                    out_statuses.append(status)
                status_index.append(i)
            if len(out_statuses) > 256:
                raise ValueError('more than 256 statuses')
            urls, merged_index, lengths, merged, copied = native.codec.merge(
                keys.urls, keys.status_index, keys.lengths, data, new, at, matched, raws,
                status_index)
            merged_keys = keysfile.Keys(urls, merged_index, out_statuses,
                                        datumruns.u32_array(lengths), [len(urls)])
            out.write_run(memoryview(merged), merged_keys, 0, len(urls))
        self.count_copied({status: copied[i] for i, status in enumerate(statuses)
                           if copied[i]}, counts)

    def reduce(self, index, groups, path, counts, runs=None):
        """`runs`: the old records the map handed over as runs of bytes (storage/datumruns.py),
        sorted here and joined like a keyed part; merged into the groups instead when a URL is
        there twice or the stage would not copy every untouched record."""
        if runs:
            run = datumruns.sorted_run(runs)
            if run.once and self.copies_unchanged(run.statuses()):
                self._join_copying(run, groups, path, counts, run.blocks())
                return
            for url, status, raw in reversed(list(run.records())):
                groups.setdefault(url, []).insert(0, (OLD_RAW, raw, status))
            with partwriter.PartWriter(path, self.schema, keys=True) as out:
                self.write_grouped(groups, out, counts)
            return
        old_path = self.old_parts.get(index)
        if old_path is not None:
            raw_ok = container.read_header(old_path).schema == self._parsed()
            part = keysfile.open_keyed(old_path) if raw_ok else None
            if part is not None and self.copies_unchanged(_present(part.keys)) and \
                    strictly_sorted(part.keys.urls):
                self._join_copying(part, groups, path, counts)
                return
            try:
                with partwriter.PartWriter(path, self.schema, keys=True) as out:
                    self.write_joined(join_sorted(self._old_entries(old_path, raw_ok), groups),
                                      out, counts)
                return
            except Unsorted:
                counts.clear()
                for record, raw in self._old_records(old_path, raw_ok):
                    for url, item in self.old_items(record, raw, counts):
                        groups.setdefault(url, []).insert(0, item)
        with partwriter.PartWriter(path, self.schema, keys=True) as out:
            self.write_grouped(groups, out, counts)


def _present(keys: keysfile.Keys) -> List[str]:
    """The statuses a keyed part's records have: its table may name more (a part merged from
    runs keeps their table, which names every status of the conversion)."""
    index = keys.status_index
    return [status for i, status in enumerate(keys.statuses) if index.find(i) >= 0]
