"""The code blocks of README.md and docs/*.md, and the checks that keep them true.

``blocks()`` reads every fenced block with its page, line, language and the HTML comment
directly above it (``<!-- not run: WHY -->``, ``<!-- output of: CMD -->``). The checks here
return a list of problems (empty: the block is fine) so that a test can show them all, and
so that a test can feed them a wrong line and see them fail.
"""

from __future__ import annotations

import functools
import importlib
import importlib.util
import re
import shlex
import subprocess
import sys
import tomllib
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
ACKSIM = str(Path(sys.executable).parent / "acksim")  # the venv's, whatever PATH says
LANGUAGES = {"sh", "python", "toml", "yaml", "text", ""}
OUTPUT_PREFIXES = ("PASS", "FAIL", "replay:")  # a comment after a command that it must print


@dataclass(frozen=True)
class Block:
    page: Path
    line: int  # of the opening fence, 1-based
    lang: str
    text: str
    note: str  # the HTML comment directly above the fence, without <!-- -->, or ""

    @property
    def id(self) -> str:
        return f"{self.page.relative_to(ROOT)}:{self.line}"

    @property
    def not_run(self) -> bool:
        return self.note.startswith("not run:")

    @property
    def output_of(self) -> str | None:
        return self.note.removeprefix("output of:").strip() if self.note.startswith("output of:") else None

    @property
    def file_name(self) -> str | None:
        """The file a python block is, when its first line names one: ``# mycleanup/processor.py``."""
        m = re.match(r"# ([\w./-]+\.py)\b", self.text)
        return m.group(1) if m else None


def blocks(pages: list[Path] = PAGES) -> list[Block]:
    """Every fenced code block of ``pages``, in order."""
    out = []
    for page in pages:
        lines = page.read_text(encoding="utf-8").splitlines()
        i = 0
        while i < len(lines):
            m = re.match(r"```(\S*)\s*$", lines[i])
            if m is None:
                i += 1
                continue
            end = next(j for j in range(i + 1, len(lines)) if lines[j].startswith("```"))
            above = lines[i - 1].strip() if i else ""
            note = above[4:-3].strip() if above.startswith("<!--") and above.endswith("-->") else ""
            out.append(Block(page, i + 1, m.group(1), "\n".join(lines[i + 1:end]) + "\n", note))
            i = end + 1
    return out


# --- sh lines ------------------------------------------------------------------------------

@dataclass
class Command:
    argv: list[str]
    text: str
    outputs: list[str] = field(default_factory=list)  # PASS/FAIL lines it must print

    @property
    def expected_exit(self) -> int:
        return 1 if any(o.startswith("FAIL") for o in self.outputs) else 0


def commands(text: str) -> list[Command]:
    """The commands of a shell block: ``\\`` and indented lines continue a command, comment
    lines after a command that start with PASS, FAIL or ``replay:`` are its expected output."""
    out: list[Command] = []
    joined: list[str] = []
    for raw in text.splitlines():
        if joined and (joined[-1].endswith("\\") or (raw[:1].isspace() and raw.strip())):
            joined[-1] = joined[-1].removesuffix("\\") + " " + raw.strip()
        else:
            joined.append(raw)
    for line in joined:
        stripped = line.strip()
        if not stripped:
            continue
        if stripped.startswith("#"):
            said = stripped[1:].strip()
            if out and said.startswith(OUTPUT_PREFIXES):
                out[-1].outputs.append(said)
            continue
        m = re.search(r"\s#\s", line)
        code, comment = (line[:m.start()], line[m.end():].strip()) if m else (line, "")
        cmd = Command(shlex.split(code), code.strip())
        if comment.startswith(OUTPUT_PREFIXES):
            cmd.outputs.append(comment)
        out.append(cmd)
    return out


def program(argv: list[str]) -> tuple[str, list[str]]:
    """(kind, arguments) of a command line: acksim, make, pip, pytest; ("", argv) otherwise."""
    argv = argv[1:] if argv[:1] == ["sudo"] else argv
    head = argv[0] if argv else ""
    if head in ("acksim", ".venv/bin/acksim"):
        return "acksim", argv[1:]
    if re.fullmatch(r"(\S*/)?python3?", head) and argv[1:3] == ["-m", "acksim"]:
        return "acksim", argv[3:]
    if re.fullmatch(r"(\S*/)?python3?", head) and argv[1:3] == ["-m", "pytest"]:
        return "pytest", argv[3:]
    if head == "make":
        return "make", argv[1:]
    if head == "pip" and argv[1:2] == ["install"]:
        return "pip", argv[2:]
    return "", argv


def is_synopsis(args: list[str]) -> bool:
    """A usage line (``[--seed N]``, ``a|b``, a placeholder in capitals), not a command to run."""
    return any(re.search(r"[\[\]|]|\.\.\.", a) or re.fullmatch(r"[A-Z][A-Z_]*", a) for a in args)


@functools.cache
def help_text(command: str = "") -> str:
    argv = [ACKSIM, *([command] if command else []), "--help"]
    return subprocess.run(argv, capture_output=True, text=True, timeout=120, check=True).stdout


def subcommands() -> list[str]:
    return re.search(r"\{([\w,]+)\}", help_text()).group(1).split(",")


def acksim_problems(args: list[str]) -> list[str]:
    """What in an ``acksim`` command line its ``--help`` does not know: the command, a
    ``--flag``, a choice (``--backend memory|sqlite``), or a scenario file that is not there."""
    if not args or args[0] not in subcommands():
        return [f"acksim has no command {args[:1]}: {', '.join(subcommands())}"]
    text = help_text(args[0])
    flags = set(re.findall(r"(?<![\w-])--[a-z][a-z0-9-]*", text))
    choices = {flag: set(values.split(",")) for flag, values in re.findall(r"(--[a-z][\w-]*) \{([^}]*)\}", text)}
    problems = []
    previous = None
    for raw in args[1:]:
        token = raw.strip("[]")
        if token.startswith("--"):
            flag = token.split("=")[0]
            if flag not in flags:
                problems.append(f"acksim {args[0]}: no option {flag}")
            previous = flag
            continue
        if previous in choices and token and not re.fullmatch(r"[A-Z][A-Z_]*", token):
            unknown = set(token.split("|")) - choices[previous]
            if unknown:
                problems.append(f"acksim {args[0]} {previous}: {sorted(unknown)} not among {sorted(choices[previous])}")
        elif previous is None and token.endswith(".toml") and not token.startswith("/") and not (ROOT / token).exists():
            problems.append(f"acksim {args[0]}: no file {token} in the repository")
        previous = None
    return problems


@functools.cache
def make_targets() -> set[str]:
    return set(re.findall(r"^([\w-]+):", (ROOT / "Makefile").read_text(), flags=re.M))


@functools.cache
def pyproject() -> dict:
    return tomllib.loads((ROOT / "pyproject.toml").read_text())


def line_problems(argv: list[str]) -> list[str]:
    """What is wrong with a command line, checked without running it."""
    kind, args = program(argv)
    if kind == "acksim":
        return acksim_problems(args)
    if kind == "make":
        return [f"make: no target {t}" for t in args if "=" not in t and t not in make_targets()]
    if kind == "pip":
        extras = set(pyproject()["project"]["optional-dependencies"])
        asked = [e for spec in args if not spec.startswith("-")
                 for group in re.findall(r"\[([\w,-]+)\]", spec) for e in group.split(",")]
        return [f"pip install: no extra {e}" for e in asked if e not in extras]
    if kind == "pytest":
        markers = {m.split(":")[0] for m in pyproject()["tool"]["pytest"]["ini_options"]["markers"]}
        return [f"pytest: no marker {args[i + 1]}" for i, a in enumerate(args[:-1])
                if a == "-m" and args[i + 1] not in markers]
    return [f"no check for this command: {' '.join(argv)}"]


# --- output --------------------------------------------------------------------------------

def missing_lines(expected: list[str], output: str) -> list[str]:
    """The lines of ``expected`` that no line of ``output`` matches (``...`` matches anything)."""
    got = [line.rstrip() for line in output.splitlines()]
    missing = []
    for want in expected:
        pattern = re.compile(".*".join(re.escape(part) for part in want.rstrip().split("...")))
        if not any(pattern.fullmatch(line) for line in got):
            missing.append(want)
    return missing


# --- names ---------------------------------------------------------------------------------

def resolve(dotted: str) -> object:
    """The module ``dotted`` names, or the attribute of its longest importable prefix."""
    parts = dotted.split(".")
    for cut in range(len(parts), 0, -1):
        module = ".".join(parts[:cut])
        try:
            spec = importlib.util.find_spec(module)
        except ModuleNotFoundError:  # a name inside a module, not a submodule
            spec = None
        if spec is not None:
            obj = importlib.import_module(module)
            for attr in parts[cut:]:
                obj = getattr(obj, attr)
            return obj
    raise ModuleNotFoundError(dotted)


def name_problems(text: str) -> list[str]:
    """The ``acksim.x`` names in ``text`` that do not exist."""
    problems = []
    for name in sorted(set(re.findall(r"\backsim(?:\.[A-Za-z_]\w*)+", text))):
        try:
            resolve(name)
        except (ModuleNotFoundError, AttributeError) as exc:
            problems.append(f"{name}: {exc}")
    return problems
