"""Deflate for the batch stages' Avro blocks and keys files: Intel's ISA-L (the `isal` package),
the same format as zlib's and read by any deflate reader, about 3.4 times as fast to compress at
level 1 and 1.7 times to decompress, measured on crawldb blocks (docs/performance.md, "Deflate by
ISA-L"). Pure, no Beam.
"""

from isal import isal_zlib

__all__ = ['deflate_raw', 'inflate_raw', 'compress', 'decompress', 'Error']

# What a damaged stream raises (zlib.error's counterpart).
Error = isal_zlib.error


def deflate_raw(data, level: int = 1) -> bytes:
    """`data` deflated without a header (an Avro block's codec 'deflate'); levels 0 to 3."""
    packer = isal_zlib.compressobj(min(level, isal_zlib.ISAL_BEST_COMPRESSION),
                                   isal_zlib.DEFLATED, -15)
    return packer.compress(data) + packer.flush()


def inflate_raw(data) -> bytes:
    """A headerless deflate stream inflated (raises Error when it is not one)."""
    return isal_zlib.decompress(data, -15)


def compress(data, level: int = 1) -> bytes:
    """zlib's format (with its header and checksum)."""
    return isal_zlib.compress(data, min(level, isal_zlib.ISAL_BEST_COMPRESSION))


def decompress(data) -> bytes:
    """zlib's format inflated (raises Error)."""
    return isal_zlib.decompress(data)
