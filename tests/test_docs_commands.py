"""Every ``interactscope …`` command written in README.md and docs/*.md names a real command and
only options that command has (issue 23: "every README and docs/ command still works as
written"). Parsed by the CLI's own click parser, without running anything: a renamed flag or a
removed subcommand fails here with the file and line."""

from __future__ import annotations

import re
import shlex
from pathlib import Path

import pytest
from typer.testing import CliRunner

from interactscope.cli import app

ROOT = Path(__file__).resolve().parents[1]
DOCS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
FENCE = re.compile(r"^\s*```")
INLINE = re.compile(r"`(interactscope [^`]+)`")
ENV = re.compile(r"^[A-Z_][A-Z0-9_]*=\S*$")


def _code_lines(path: Path) -> list[tuple[int, str]]:
    """(line number, text) of the shell lines inside fenced code blocks (continuation lines,
    ending in a backslash, joined onto their first line) and of the inline code spans that
    start with ``interactscope``."""
    out: list[tuple[int, str]] = []
    inside, lang, pending, start = False, "", "", 0
    for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        if FENCE.match(line):
            inside, lang = (not inside), line.strip().strip("`").strip()
            continue
        if not inside:  # prose: the commands in inline code spans
            out += [(n, m) for m in INLINE.findall(line)]
            continue
        if lang not in ("", "bash", "sh", "shell", "console"):
            continue
        text = line.strip().removeprefix("$ ")
        if not pending:
            start = n
        if text.endswith("\\"):
            pending += text[:-1] + " "
            continue
        out.append((start, pending + text))
        pending = ""
    return out


def _commands(path: Path) -> list[tuple[int, list[str]]]:
    """Each ``interactscope`` invocation of the file's code blocks, as its argument list."""
    found = []
    for n, line in _code_lines(path):
        line = line.split(" #", 1)[0]
        for part in re.split(r"&&|\|\||;|\|", line):
            try:
                words = shlex.split(part)
            except ValueError:
                continue
            while words and ENV.match(words[0]):
                words = words[1:]
            # usage synopses: "[--out DIR]" is the option --out with its value
            words = [w.strip("[]") for w in words if w.strip("[]")]
            if words[:1] == ["interactscope"]:
                found.append((n, words[1:]))
    return found


CASES = [
    pytest.param(path, n, args, id=f"{path.name}:{n}")
    for path in DOCS
    for n, args in _commands(path)
]


def test_the_docs_hold_commands() -> None:
    # the README's first command and the guides' commands are found at all
    assert len(CASES) >= 40
    assert any(p.name == "README.md" for p, *_ in (c.values for c in CASES))


def _placeholder(word: str) -> bool:
    return word in ("...", "…") or word.startswith("<") or word.isupper()


@pytest.mark.parametrize(("path", "line", "args"), CASES)
def test_documented_command_parses(path: Path, line: int, args: list[str]) -> None:
    words = [w for w in args if w not in ("--help", "-h")]
    if any(_placeholder(w) for w in words[:2] if not w.startswith("-")):
        if not any(w.startswith("-") for w in words):
            return  # "interactscope COMMAND --help": a pattern, not a command
    # --help last: the whole line is parsed (unknown command or option: exit 2), then the
    # eager --help prints the command's help and exits 0 before any value is checked or run
    res = CliRunner().invoke(app, [*words, "--help"])
    assert res.exit_code == 0, f"{path.name}:{line}: `interactscope {' '.join(args)}`: {res.output}"
