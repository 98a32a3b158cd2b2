"""The upload appender: whatever mix of aligned and unaligned blocks arrives, the file holds
exactly the bytes in order; aligned blocks go around the page cache where the filesystem
allows it (ext4 here), and everything else through the ordinary descriptor."""

import os

import pytest

from yitong_services.datasets.appender import ALIGN, Appender, BufferPool, aligned_buffer


def _direct_works(directory) -> bool:
    probe = directory / "probe"
    try:
        fd = os.open(probe, os.O_WRONLY | os.O_CREAT | getattr(os, "O_DIRECT", 0), 0o644)
    except OSError:
        return False
    os.close(fd)
    probe.unlink()
    return hasattr(os, "O_DIRECT")


def _block(n: int, seed: int) -> memoryview:
    view = aligned_buffer(n)
    view[:] = (bytes([seed % 251]) * 7 + os.urandom(9)) * (n // 16) + b"z" * (n % 16)
    return view


def test_mixed_blocks_land_in_order(tmp_path):
    path = tmp_path / "part"
    expected = bytearray()
    with Appender(path) as f:
        for n, seed in [(ALIGN * 4, 1), (ALIGN * 2, 2), (100, 3), (ALIGN, 4), (ALIGN - 100, 5), (ALIGN * 3, 6)]:
            block = _block(n, seed)
            f.write(block)
            expected += block
        f.write(b"tail, read-only bytes")
        expected += b"tail, read-only bytes"
        f.sync()
        direct = f.direct_bytes
    assert path.read_bytes() == bytes(expected)
    if _direct_works(tmp_path):
        # the first two blocks start aligned; after the 100-byte one the position is off until
        # the ALIGN-100 block puts it back, so the last aligned block goes direct again
        assert direct == ALIGN * 4 + ALIGN * 2 + ALIGN * 3
    else:
        assert direct == 0


def test_resuming_an_unaligned_partial_then_truncating(tmp_path):
    path = tmp_path / "part"
    path.write_bytes(b"x" * 1000)  # what an interrupted upload left
    with Appender(path) as f:
        assert f.position == 1000
        f.write(_block(ALIGN * 2, 9))  # unaligned position: through the page cache
        assert f.direct_bytes == 0
        f.truncate(1000)  # a refused body is dropped again
        f.sync()
    assert path.read_bytes() == b"x" * 1000


def test_unaligned_memory_is_not_sent_direct(tmp_path):
    buffer = aligned_buffer(ALIGN * 3)
    buffer[:] = os.urandom(ALIGN * 3)
    with Appender(tmp_path / "part") as f:
        f.write(buffer[8 : 8 + ALIGN * 2])  # aligned length, misaligned address
        assert f.direct_bytes == 0
    assert (tmp_path / "part").read_bytes() == bytes(buffer[8 : 8 + ALIGN * 2])


@pytest.mark.parametrize("keep", [0, 2])
def test_buffer_pool_reuses_up_to_keep(keep):
    pool = BufferPool(ALIGN, keep=keep)
    first = pool.take(2)
    assert [len(b) for b in first] == [ALIGN, ALIGN]
    pool.give(first)
    again = pool.take(3)
    reused = sum(any(a is b for b in first) for a in again)
    assert reused == min(keep, 2) and len(again) == 3
