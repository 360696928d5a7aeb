"""The one reading function (``read_data``) and the one writing function (``write_atomic``,
``open_append``) of ``interactscope.core.files``: every failure class is one line naming the
file, the line and the fix; writes are atomic and never follow a symbolic link."""

from __future__ import annotations

import errno
import os

import pytest

from interactscope.core import files
from interactscope.core.errors import InteractScopeError
from interactscope.core.files import FileReadError, UnsafeWriteError, read_data, write_atomic

BIG = "1" * 5000  # over Python's 4300-digit int-from-text limit


def _bad(path, text_or_bytes, fmt=None):
    data = text_or_bytes if isinstance(text_or_bytes, bytes) else text_or_bytes.encode()
    path.write_bytes(data)
    with pytest.raises(FileReadError) as ei:
        read_data(path, fmt)
    msg = str(ei.value)
    assert "\n" not in msg and msg.startswith(str(path))
    return ei.value


@pytest.mark.parametrize(
    ("name", "body", "line", "what"),
    [
        ("deep.json", "[" * 100_000 + "]" * 100_000, 0, "nested deeper than 64 levels"),
        ("int.json", '{"a": 1,\n "b": ' + BIG + "}", 2, "more than 4300 digits"),
        ("utf8.json", b'{"a":\n "caf\xe9"}', 2, "invalid UTF-8 at byte 11"),
        ("syntax.json", '{"a": 1,\n\n "b": }', 3, "invalid JSON (Expecting value at column 7)"),
        ("tag.yaml", "a: 1\nb: !!python/object:os.system x\n", 2, "unsupported YAML"),
        ("deep.yaml", "[" * 1_000 + "]" * 1_000, 0, "nested deeper than 64 levels"),
        ("int.yaml", "a: 1\nb: " + BIG + "\n", 2, "more than 4300 digits"),
        ("null.jsonl", '{"a": 1}\nnull\n', 2, "the line is null"),
        ("int.jsonl", '{"a": 1}\n\n{"b": ' + BIG + "}\n", 3, "more than 4300 digits"),
    ],
)
def test_every_failure_class_is_one_line_with_file_line_and_fix(tmp_path, name, body, line, what):
    err = _bad(tmp_path / name, body)
    assert err.line == line and what in err.what and err.fix
    assert isinstance(err, InteractScopeError) and isinstance(err, ValueError)
    where = f"{tmp_path / name}:{line}: " if line else f"{tmp_path / name}: "
    assert str(err) == f"{where}{err.what}; {err.fix}"


def test_missing_folder_and_long_names(tmp_path):
    with pytest.raises(FileReadError, match=r"x.json: file not found; check the path$"):
        read_data(tmp_path / "x.json")
    with pytest.raises(FileReadError, match="is a folder"):
        read_data(tmp_path, "json")
    long = tmp_path / ("n" * 300 + ".json")  # ENAMETOOLONG from the OS
    with pytest.raises(FileReadError, match="a path component is 305 bytes, over 255"):
        read_data(long)
    assert files.exists(long) is False  # Path.exists would raise ENAMETOOLONG


def test_values_read(tmp_path):
    (tmp_path / "a.jsonl").write_text('{"a": 1}\n\n[2]\n')
    assert read_data(tmp_path / "a.jsonl") == [{"a": 1}, [2]]
    (tmp_path / "a.yml").write_text("k: [1, 2]\n")
    assert read_data(tmp_path / "a.yml") == {"k": [1, 2]}
    (tmp_path / "a.json").write_text('{"x": "\\u00e9"}')
    assert read_data(tmp_path / "a.json") == {"x": "é"}


def test_write_atomic_replaces_a_planted_link_and_leaves_its_target(tmp_path):
    outside = tmp_path / "outside.txt"
    outside.write_text("precious\n")
    out = tmp_path / "out"
    out.mkdir()
    (out / "summary.json").symlink_to(outside)
    write_atomic(out / "summary.json", '{"ok": true}\n')
    assert outside.read_text() == "precious\n"
    assert not (out / "summary.json").is_symlink()
    assert (out / "summary.json").read_text() == '{"ok": true}\n'
    assert sorted(p.name for p in out.iterdir()) == ["summary.json"]  # no temp file left
    write_atomic(out / "lines.jsonl", (f"{i}\n" for i in range(3)))  # streamed
    assert (out / "lines.jsonl").read_text() == "0\n1\n2\n"


def test_write_atomic_failure_keeps_the_old_file(tmp_path, monkeypatch):
    dest = tmp_path / "summary.json"
    dest.write_text('{"old": 1}\n')
    real_fsync = os.fsync

    def full(fd):
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(os, "fsync", full)
    with pytest.raises(OSError) as ei:
        write_atomic(dest, '{"new": 2}\n')
    monkeypatch.setattr(os, "fsync", real_fsync)
    assert ei.value.errno == errno.ENOSPC
    assert dest.read_text() == '{"old": 1}\n'  # never left empty or half-written
    assert [p.name for p in tmp_path.iterdir()] == ["summary.json"]


def test_open_append_refuses_a_link(tmp_path):
    outside = tmp_path / "outside.jsonl"
    outside.write_text("keep\n")
    (tmp_path / "log.jsonl").symlink_to(outside)
    with pytest.raises(UnsafeWriteError, match=r"log.jsonl is a symbolic link; remove it"):
        files.open_append(tmp_path / "log.jsonl")
    assert outside.read_text() == "keep\n"
    with files.open_append(tmp_path / "new.jsonl") as fh:
        fh.write("a\n")
    with files.open_append(tmp_path / "new.jsonl", read=True) as fh:
        fh.write("b\n")
        fh.seek(0)
        assert fh.read() == "a\nb\n"


def test_errors_survive_pickling(tmp_path):
    import pickle

    err = FileReadError(tmp_path / "a.json", "invalid JSON (x)", "fix the JSON syntax", 3)
    back = pickle.loads(pickle.dumps(err))
    assert str(back) == str(err) and back.line == 3
    link = UnsafeWriteError(errno.ELOOP, "a symbolic link; remove it", "/x/log.jsonl")
    assert str(pickle.loads(pickle.dumps(link))) == str(link)
