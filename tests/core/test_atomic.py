"""Atomic writes: permissions follow the umask, a failed write leaves nothing behind."""

import pytest


def test_atomic_outputs_get_umask_permissions_and_no_partial_file(tmp_path):
    import os

    from geneb.core.integrity import atomic_path

    old = os.umask(0o022)
    try:
        with atomic_path(tmp_path / "out.txt") as tmp:
            tmp.write_text("x")
        assert (tmp_path / "out.txt").stat().st_mode & 0o777 == 0o644
        with pytest.raises(RuntimeError), atomic_path(tmp_path / "fail.txt") as tmp:
            tmp.write_text("half")
            raise RuntimeError("killed")
        assert sorted(p.name for p in tmp_path.iterdir()) == ["out.txt"]
    finally:
        os.umask(old)
