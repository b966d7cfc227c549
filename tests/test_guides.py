"""The hand-written guides (README.md, README.zh-CN.md, docs/**/*.md) say what the tool does.

- Every `##`/`###` heading of a translated page has a counterpart in its translation: each heading
  carries a `<!-- section: slug -->` comment on the line above it, and both files list the same
  slugs at the same levels in the same order. A translation shows the same code blocks, in the
  same order (comments may be translated), and links the translated pages, not their originals.
- Every relative link resolves to a file, and a `#fragment` to a heading (GitHub's slugs) or an
  `<a id>` of that file.
- Every ```python block parses. A block preceded by `<!-- before: NAME target=X.Y -->` is migrated
  by the tool (`command=downgrade` for downgrade) and must become the block preceded by
  `<!-- after: NAME -->`; one preceded by `<!-- unchanged: NAME target=X.Y -->` must stay as it is.
  Either may say `reports=CODE,CODE`: codes the run must report (a reason, a note, a rule).
- Every `ms-migrate COMMAND ...` in a shell block or inline code names a real command and only
  options that command has. A `$ ms-migrate rules` or `$ ms-migrate explain NAME` line in a text
  block is followed by what the command prints (a `...` line stands for lines left out).
- The README's rule table names every rule with its name and kind.
"""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Optional

import click
import pytest

ROOT = Path(__file__).parent.parent
PAGES = sorted(
    path
    for path in [ROOT / "README.md", ROOT / "README.zh-CN.md", *(ROOT / "docs").rglob("*.md")]
    if path.exists()
)
# A page and its translation: the same sections, in the same order.
TRANSLATIONS = [
    (ROOT / "README.md", ROOT / "README.zh-CN.md"),
    (ROOT / "docs" / "migration-guide.md", ROOT / "docs" / "zh" / "migration-guide.md"),
    (ROOT / "docs" / "verification.md", ROOT / "docs" / "zh" / "verification.md"),
    (ROOT / "docs" / "pre-commit.md", ROOT / "docs" / "zh" / "pre-commit.md"),
    (ROOT / "docs" / "commands.md", ROOT / "docs" / "zh" / "commands.md"),
    (ROOT / "docs" / "measurements.md", ROOT / "docs" / "zh" / "measurements.md"),
    (ROOT / "docs" / "layout.md", ROOT / "docs" / "zh" / "layout.md"),
    (ROOT / "docs" / "editors.md", ROOT / "docs" / "zh" / "editors.md"),
    (ROOT / "docs" / "fan-out.md", ROOT / "docs" / "zh" / "fan-out.md"),
    (ROOT / "docs" / "json-output.md", ROOT / "docs" / "zh" / "json-output.md"),
    (ROOT / "docs" / "performance.md", ROOT / "docs" / "zh" / "performance.md"),
    (ROOT / "docs" / "release-changes.md", ROOT / "docs" / "zh" / "release-changes.md"),
    (ROOT / "docs" / "robustness.md", ROOT / "docs" / "zh" / "robustness.md"),
    # Generated in both languages by `python -m ms_migrate.docs` (each `##` with its section comment).
    (ROOT / "docs" / "rules.md", ROOT / "docs" / "zh" / "rules.md"),
    (ROOT / "docs" / "reasons.md", ROOT / "docs" / "zh" / "reasons.md"),
    (ROOT / "docs" / "release-pairs.md", ROOT / "docs" / "zh" / "release-pairs.md"),
]


def _name(path: Path) -> str:
    return path.relative_to(ROOT).as_posix() if path.is_relative_to(ROOT) else str(path)


# ---------------------------------------------------------------------------------------------
# Reading Markdown: fences, headings, the HTML comments before them


_FENCE = re.compile(r"^(?P<indent> {0,3})(?P<marker>`{3,}|~{3,})(?P<info>[^`]*)$")
_HEADING = re.compile(r"^(?P<level>#{1,6})\s+(?P<text>.*?)\s*#*\s*$")
_COMMENT = re.compile(r"^<!--\s*(?P<body>.*?)\s*-->$")


@dataclass
class Fence:
    language: str
    code: str
    line: int  # 1-based line of the opening fence
    marker: Optional[str] = None  # the HTML comment just before it (blank lines allowed between)


@dataclass
class Heading:
    level: int
    text: str
    line: int
    marker: Optional[str] = None  # the HTML comment on the line just above it


@dataclass
class Page:
    path: Path
    fences: list[Fence] = field(default_factory=list)
    headings: list[Heading] = field(default_factory=list)
    prose: list[tuple[int, str]] = field(default_factory=list)  # (line, text) outside fences


def read_page(path: Path) -> Page:
    page = Page(path)
    lines = path.read_text(encoding="utf-8").splitlines()
    comment: Optional[str] = None  # the last HTML comment, until something else than a blank line
    comment_line = -1
    index = 0
    while index < len(lines):
        line = lines[index]
        fence = _FENCE.match(line)
        if fence:
            marker = fence.group("marker")
            opening = index + 1
            body: list[str] = []
            index += 1
            while index < len(lines) and not (
                lines[index].strip().startswith(marker[0] * len(marker))
                and lines[index].strip().strip(marker[0]) == ""
            ):
                body.append(lines[index])
                index += 1
            code = "\n".join(body) + "\n" if body else ""
            page.fences.append(Fence(fence.group("info").strip().split(" ")[0], code, opening, comment))
            comment = None
            index += 1
            continue
        page.prose.append((index + 1, line))
        match = _COMMENT.match(line.strip())
        heading = _HEADING.match(line)
        if match:
            comment, comment_line = match.group("body"), index
        elif heading:
            above = comment if comment_line == index - 1 else None
            page.headings.append(
                Heading(len(heading.group("level")), heading.group("text"), index + 1, above)
            )
            comment = None
        elif line.strip():
            comment = None
        index += 1
    return page


PAGE_CACHE = {path: read_page(path) for path in PAGES}


def test_the_guides_exist() -> None:
    names = {_name(path) for path in PAGES}
    for expected in (
        "README.zh-CN.md",
        "docs/migration-guide.md",
        "docs/zh/migration-guide.md",
        "docs/verification.md",
        "docs/zh/verification.md",
        "docs/pre-commit.md",
        "docs/zh/pre-commit.md",
    ):
        assert expected in names
    assert "docs/verify.md" not in names, "docs/verification.md replaces it"


# ---------------------------------------------------------------------------------------------
# Sections of a page and of its translation


_SECTION = re.compile(r"^section:\s*(?P<slug>[a-z0-9][a-z0-9-]*)$")


def sections(page: Page) -> list[tuple[int, str]]:
    """(level, slug) of each `##`/`###` heading; a heading without its section comment fails."""
    found = []
    for heading in page.headings:
        if heading.level not in (2, 3):
            continue
        match = _SECTION.match(heading.marker or "")
        assert match, (
            f"{_name(page.path)}:{heading.line}: {'#' * heading.level} {heading.text}: put "
            "`<!-- section: some-slug -->` on the line above it, and the same above its translation"
        )
        found.append((heading.level, match.group("slug")))
    return found


@pytest.mark.parametrize("original,translation", TRANSLATIONS, ids=[_name(a) for a, _ in TRANSLATIONS])
def test_translation_has_every_section(original: Path, translation: Path) -> None:
    mine, theirs = sections(PAGE_CACHE[original]), sections(PAGE_CACHE[translation])
    assert len({slug for _, slug in mine}) == len(mine), f"{_name(original)}: a section slug repeats"
    missing = [slug for slug in mine if slug not in theirs]
    extra = [slug for slug in theirs if slug not in mine]
    assert not missing, f"{_name(translation)} lacks sections of {_name(original)}: {missing}"
    assert not extra, f"{_name(translation)} has sections {_name(original)} lacks: {extra}"
    assert mine == theirs, f"{_name(translation)}: sections in another order or at another level"


_COMMENT_IN_CODE = re.compile(r"(?:^|\s)#(?:\s.*)?$")


def comparable(fence: Fence) -> str:
    """What a code block and its translation share: a python block's syntax tree; any other
    block's text without its `# comments` (which a translation may translate) or trailing blanks."""
    if fence.language in ("python", "py"):
        return ast.dump(ast.parse(fence.code))
    lines = []
    for line in fence.code.splitlines():
        if line.lstrip().startswith("#") and fence.language != "diff":
            continue  # a whole-line comment
        lines.append(_COMMENT_IN_CODE.sub("", line).rstrip())
    return "\n".join(lines)


@pytest.mark.parametrize("original,translation", TRANSLATIONS, ids=[_name(a) for a, _ in TRANSLATIONS])
def test_translation_shows_the_same_code(original: Path, translation: Path) -> None:
    mine, theirs = PAGE_CACHE[original].fences, PAGE_CACHE[translation].fences
    assert [fence.language for fence in mine] == [fence.language for fence in theirs], (
        f"{_name(translation)}: not the code blocks of {_name(original)} (their languages differ)"
    )
    for english, chinese in zip(mine, theirs):
        assert comparable(english) == comparable(chinese), (
            f"{_name(translation)}:{chinese.line}: differs from {_name(original)}:{english.line}"
        )


@pytest.mark.parametrize("original,translation", TRANSLATIONS, ids=[_name(a) for a, _ in TRANSLATIONS])
def test_translation_links_translations(original: Path, translation: Path) -> None:
    """A translated page links the translation of a page that has one, except its own original."""
    translated = {english.resolve(): chinese for english, chinese in TRANSLATIONS}
    problems = []
    for line, target in links(PAGE_CACHE[translation]):
        file_part = target.partition("#")[0]
        if not file_part or re.match(r"^[a-z][a-z0-9+.-]*:", target):
            continue
        linked = (translation.parent / file_part).resolve()
        if linked in translated and linked != original.resolve():
            problems.append(f"{_name(translation)}:{line}: {target}: link {_name(translated[linked])}")
    assert not problems, "\n".join(problems)


def test_readme_links_its_translation() -> None:
    head = (ROOT / "README.md").read_text(encoding="utf-8").splitlines()[:5]
    assert any("(README.zh-CN.md)" in line for line in head)
    head = (ROOT / "README.zh-CN.md").read_text(encoding="utf-8").splitlines()[:5]
    assert any("(README.md)" in line for line in head)


# ---------------------------------------------------------------------------------------------
# Links


_LINK = re.compile(r"(?<!!)\[(?:[^\]\[]|\[[^\]]*\])*\]\((?P<target><[^>]*>|[^)\s]+)(?:\s+\"[^\"]*\")?\)")
_IMAGE = re.compile(r"!\[[^\]]*\]\((?P<target>[^)\s]+)\)")
_CODE_SPAN = re.compile(r"(`+)(?P<code>.+?)\1")
_ANCHOR = re.compile(r"<a\s+(?:id|name)=\"(?P<id>[^\"]+)\"")


def github_slug(text: str) -> str:
    """The anchor GitHub gives a heading: the rendered text lower-cased, punctuation dropped."""
    text = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", text)  # a link keeps its text
    text = text.replace("`", "").replace("*", "")
    return re.sub(r"[^\w\- ]", "", text.lower()).replace(" ", "-")


def anchors(page: Page) -> set[str]:
    found: set[str] = set()
    counts: dict[str, int] = {}
    for heading in page.headings:
        slug = github_slug(heading.text)
        seen = counts.get(slug, 0)
        counts[slug] = seen + 1
        found.add(slug if not seen else f"{slug}-{seen}")
    for _, line in page.prose:
        found |= {match.group("id") for match in _ANCHOR.finditer(line)}
    return found


def links(page: Page) -> list[tuple[int, str]]:
    found = []
    for number, line in page.prose:
        line = _CODE_SPAN.sub("", line)
        for pattern in (_LINK, _IMAGE):
            for match in pattern.finditer(line):
                found.append((number, match.group("target").strip("<>")))
    return found


@pytest.mark.parametrize("path", PAGES, ids=_name)
def test_relative_links_resolve(path: Path) -> None:
    page = PAGE_CACHE[path]
    problems = []
    for line, target in links(page):
        if re.match(r"^[a-z][a-z0-9+.-]*:", target):  # https:, mailto:
            continue
        file_part, _, fragment = target.partition("#")
        linked = (path.parent / file_part).resolve() if file_part else path
        if not linked.exists():
            problems.append(f"{_name(path)}:{line}: {target}: no such file")
            continue
        if fragment and linked.suffix == ".md":
            known = anchors(PAGE_CACHE.get(linked) or read_page(linked))
            if fragment not in known:
                problems.append(f"{_name(path)}:{line}: {target}: no heading or anchor #{fragment}")
    assert not problems, "\n".join(problems)


def test_slugs_follow_github() -> None:
    assert github_slug("Verification by execution (`verify`, `upgrade --verify`)") == (
        "verification-by-execution-verify-upgrade---verify"
    )
    assert github_slug("Exit codes") == "exit-codes"
    assert github_slug("PYNATIVE 模式下的两次前向计算") == "pynative-模式下的两次前向计算"
    assert (
        github_slug("1.8 to 1.10: `mindspore.ops`, stop_gradient") == "18-to-110-mindsporeops-stop_gradient"
    )


# ---------------------------------------------------------------------------------------------
# Python examples


_EXAMPLE = re.compile(r"^(?P<role>before|after|unchanged):\s*(?P<name>[\w.-]+)(?P<options>(?:\s+\w+=\S+)*)$")


@dataclass
class Example:
    page: Path
    role: str
    name: str
    options: dict[str, str]
    fence: Fence

    @property
    def where(self) -> str:
        return f"{_name(self.page)}:{self.fence.line}"


def examples(page: Page) -> list[Example]:
    found = []
    for fence in page.fences:
        match = _EXAMPLE.match(fence.marker or "")
        if match is None:
            continue
        options = dict(item.split("=", 1) for item in match.group("options").split())
        found.append(Example(page.path, match.group("role"), match.group("name"), options, fence))
    return found


PYTHON_BLOCKS = [
    (path, fence) for path in PAGES for fence in PAGE_CACHE[path].fences if fence.language in ("python", "py")
]


@pytest.mark.parametrize(
    "path,fence", PYTHON_BLOCKS, ids=[f"{_name(path)}:{fence.line}" for path, fence in PYTHON_BLOCKS]
)
def test_python_block_parses(path: Path, fence: Fence) -> None:
    try:
        ast.parse(fence.code)
    except SyntaxError as error:
        pytest.fail(f"{_name(path)}:{fence.line + (error.lineno or 0)}: {error.msg}")


def pairing_problems(page: Page) -> list[str]:
    """Markers that do not pair up: an after without its before, a repeated name, a non-python block."""
    found = examples(page)
    problems = [
        f"{item.where}: an example must be a python block"
        for item in found
        if item.fence.language != "python"
    ]
    befores = {item.name for item in found if item.role == "before"}
    afters = {item.name for item in found if item.role == "after"}
    names = [item.name for item in found if item.role != "after"]
    problems += [
        f"{_name(page.path)}: example {name!r} is named twice" for name in set(names) if names.count(name) > 1
    ]
    problems += [f"{_name(page.path)}: after: {name} has no before" for name in sorted(afters - befores)]
    problems += [f"{_name(page.path)}: before: {name} has no after" for name in sorted(befores - afters)]
    return problems


@pytest.mark.parametrize("path", PAGES, ids=_name)
def test_examples_pair_up(path: Path) -> None:
    problems = pairing_problems(PAGE_CACHE[path])
    assert not problems, "\n".join(problems)


def _cases() -> list[tuple[Example, Optional[Example]]]:
    """(before, its after) and (unchanged, None) for every page."""
    cases: list[tuple[Example, Optional[Example]]] = []
    for path in PAGES:
        found = examples(PAGE_CACHE[path])
        afters = {item.name: item for item in found if item.role == "after"}
        for item in found:
            if item.role == "before":
                cases.append((item, afters.get(item.name)))
            elif item.role == "unchanged":
                cases.append((item, None))
    return cases


EXAMPLE_CASES = _cases()


def migrate(example: Example):  # type: ignore[no-untyped-def]
    from ms_migrate.core.engine import downgrade_text, migrate_text
    from ms_migrate.facts.versions import Version

    command = example.options.get("command", "upgrade")
    assert command in ("upgrade", "downgrade"), f"{example.where}: command={command}"
    run = downgrade_text if command == "downgrade" else migrate_text
    return run(example.fence.code, Version.parse(example.options.get("target", "2.10")))


def test_the_guides_hold_examples() -> None:
    pages = {_name(example.page) for example, _ in EXAMPLE_CASES}
    assert {"docs/migration-guide.md", "docs/zh/migration-guide.md"} <= pages
    assert any(after is None for _, after in EXAMPLE_CASES)


@pytest.mark.parametrize(
    "example,after",
    EXAMPLE_CASES,
    ids=[f"{_name(example.page)}:{example.name}" for example, _ in EXAMPLE_CASES],
)
def test_example_migrates_as_shown(example: Example, after: Optional[Example]) -> None:
    if example.role == "before" and after is None:
        pytest.fail(f"{example.where}: before: {example.name} has no after")
    result = migrate(example)
    expected = after.fence.code if after is not None else example.fence.code
    assert result.text == expected, f"{example.where}: the tool's output differs from the page"
    if after is not None:
        assert result.fixed, f"{example.where}: nothing was converted"
    reported = {item.code for item in result.diagnostics}
    wanted = {code for code in example.options.get("reports", "").split(",") if code}
    assert wanted <= reported, f"{example.where}: reports {sorted(reported)}, the page says {sorted(wanted)}"


def test_translated_examples_match() -> None:
    """The Chinese guide shows the same code as the English one (comments may be translated)."""

    def code(path: Path) -> dict[tuple[str, str], str]:
        return {
            (item.role, item.name): ast.dump(ast.parse(item.fence.code))
            for item in examples(PAGE_CACHE[path])
        }

    english = code(ROOT / "docs" / "migration-guide.md")
    chinese = code(ROOT / "docs" / "zh" / "migration-guide.md")
    assert english == chinese


# ---------------------------------------------------------------------------------------------
# Commands of the tool in shell blocks and inline code


_COMMAND = re.compile(r"(?:^|[\s`(])(?:ms-migrate|python -m ms_migrate)\s+(?P<rest>.*)$")
_HOOK_STATUS = re.compile(r"\.{3,}\s*(?:Passed|Failed|Skipped|\(no files to check\)Skipped)$")
_OPTION = re.compile(r"(?<![\w.\-/])(?P<option>--?[A-Za-z][\w-]*)")
_SHELL_LANGUAGES = ("", "sh", "shell", "bash", "console", "text", "yaml", "yml")


def _command_lines(page: Page) -> list[tuple[int, str]]:
    """Each `ms-migrate ...` command as one line: continuation lines joined, comments dropped."""
    found: list[tuple[int, str]] = []
    for fence in page.fences:
        if fence.language not in _SHELL_LANGUAGES:
            continue
        logical: list[tuple[int, str]] = []
        for offset, raw in enumerate(fence.code.splitlines()):
            line = raw.split(" #", 1)[0].rstrip()
            # A backslash continues a line; so does an indented `[--option ...]` under a synopsis.
            synopsis = raw[:1] == " " and line.strip().startswith("[")
            continues = bool(logical) and (logical[-1][1].endswith("\\") or synopsis)
            if continues and not _COMMAND.search(line):
                number, text = logical[-1]
                logical[-1] = (number, text.rstrip("\\") + " " + line.strip())
            else:
                logical.append((fence.line + offset + 1, line))
        found += logical
    for number, line in page.prose:
        for match in _CODE_SPAN.finditer(line):
            found.append((number, match.group("code")))
    # pre-commit's status line (`ms-migrate check....Failed`) names a hook, not a command.
    return [
        (number, line) for number, line in found if _COMMAND.search(line) and not _HOOK_STATUS.search(line)
    ]


def _options(command: click.Command) -> set[str]:
    names = {"-h", "--help"}
    for parameter in command.params:
        names |= set(parameter.opts) | set(parameter.secondary_opts)
    return names


COMMAND_LINES = [(path, number, line) for path in PAGES for number, line in _command_lines(PAGE_CACHE[path])]


def test_the_guides_show_commands() -> None:
    pages = {_name(path) for path, _, _ in COMMAND_LINES}
    assert {"README.md", "docs/migration-guide.md", "docs/pre-commit.md", "docs/verification.md"} <= pages


@pytest.mark.parametrize(
    "path,number,line", COMMAND_LINES, ids=[f"{_name(path)}:{number}" for path, number, _ in COMMAND_LINES]
)
def test_command_exists_with_its_options(path: Path, number: int, line: str) -> None:
    from ms_migrate.frontends.cli import main

    match = _COMMAND.search(line)
    assert match is not None
    rest = re.split(r"\s(?:\||&&|\|\||;|>|2>)\s", " " + match.group("rest") + " ")[0].strip()
    words = rest.split()
    where = f"{_name(path)}:{number}: {line.strip()}"
    if not words or words[0].startswith("-"):
        options = _options(main)
        assert all(word in options for word in words if word.startswith("-")), where
        return
    context = click.Context(main)
    command = main.get_command(context, words[0])
    assert command is not None, f"{where}: no command {words[0]!r}"
    known = _options(command)
    for option in _OPTION.finditer(" ".join(words[1:])):
        name = option.group("option").split("=", 1)[0]
        assert name in known, f"{where}: `{words[0]}` has no option {name}"
    if words[0] == "explain" and len(words) > 1 and re.fullmatch(r"MS[RN]?\d{3}", words[1]):
        from click.testing import CliRunner

        result = CliRunner().invoke(main, ["explain", words[1]])
        assert result.exit_code == 0, f"{where}: {result.output}"


# ---------------------------------------------------------------------------------------------
# What `rules` and `explain` print, and the README's rule table


_PROMPT = re.compile(r"^\$ ms-migrate (?P<args>(?:rules|explain)\b.*)$")


def shown_outputs(page: Page) -> list[tuple[int, list[str], list[str]]]:
    """(line, arguments, lines shown) for each `$ ms-migrate rules|explain ...` in a text block."""
    found: list[tuple[int, list[str], list[str]]] = []
    for fence in page.fences:
        if fence.language not in ("text", "console"):
            continue
        current: Optional[tuple[int, list[str], list[str]]] = None
        for offset, line in enumerate(fence.code.splitlines()):
            if line.startswith("$ "):
                match = _PROMPT.match(line)
                current = (fence.line + offset + 1, match.group("args").split(), []) if match else None
                if current is not None:
                    found.append(current)
            elif current is not None:
                current[2].append(line)
    return found


SHOWN_OUTPUTS = [(path, *item) for path in PAGES for item in shown_outputs(PAGE_CACHE[path])]


def test_the_guides_show_rules_and_explain() -> None:
    shown = {(_name(path), args[0]) for path, _, args, _ in SHOWN_OUTPUTS}
    assert {("README.md", "rules"), ("README.md", "explain"), ("README.zh-CN.md", "explain")} <= shown


@pytest.mark.parametrize(
    "path,number,args,lines",
    SHOWN_OUTPUTS,
    ids=[f"{_name(path)}:{number}" for path, number, _, _ in SHOWN_OUTPUTS],
)
def test_shown_output_is_real(path: Path, number: int, args: list[str], lines: list[str]) -> None:
    """The lines shown are what the command prints, in order; `...` stands for lines left out."""
    from click.testing import CliRunner

    from ms_migrate.frontends.cli import main

    result = CliRunner().invoke(main, args)
    assert result.exit_code == 0, result.output
    real = result.output.rstrip("\n").splitlines()
    while lines and not lines[-1].strip():
        lines = lines[:-1]
    where = f"{_name(path)}:{number}: ms-migrate {' '.join(args)}"
    if "..." not in lines:
        assert lines == real, where
        return
    position = 0
    for line in lines:
        if line == "...":
            continue
        assert line in real[position:], f"{where}: {line!r} is not printed (or not in this order)"
        position = real.index(line, position) + 1


def test_readme_rule_table_matches_the_rules() -> None:
    from ms_migrate.rules.base import all_rules

    for readme in (ROOT / "README.md", ROOT / "README.zh-CN.md"):
        rows = {}
        for _, line in PAGE_CACHE[readme].prose:
            cells = [cell.strip() for cell in line.strip().strip("|").split("|")]
            if len(cells) == 4 and re.fullmatch(r"MS\d{3}", cells[0]):
                rows[cells[0]] = (cells[1].strip("`"), cells[2])
        builtin = {
            rule.code: (rule.name, rule.kind)
            for rule in all_rules()
            if rule.__module__.startswith("ms_migrate.")
        }
        assert rows == builtin, f"{_name(readme)}: the rule table is not `ms-migrate rules`"


def test_the_readme_first_diff_is_what_upgrade_prints_for_the_example(tmp_path: Path) -> None:
    """The README opens with the diff of the bundled example's train.py: the real dry run of it,
    in a copy of the project (whose requirements.txt names the target)."""
    import shutil
    import subprocess
    import sys

    project = tmp_path / "legacy_project"
    shutil.copytree(ROOT / "examples" / "legacy_project", project)
    preview = subprocess.run(
        [sys.executable, "-m", "ms_migrate", "upgrade", "--dry-run", "src/train.py"],
        capture_output=True,
        text=True,
        cwd=project,
    )
    assert preview.returncode == 1, preview.stderr
    shown = next(fence for fence in PAGE_CACHE[ROOT / "README.md"].fences if fence.language == "diff")
    assert shown.code == preview.stdout
