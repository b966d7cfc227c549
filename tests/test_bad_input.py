"""Input Python or Jupyter would reject, or that is too deep to rewrite: reported, skipped, exit 2,
and the other files still processed (issue: one bad file never stops a run)."""

from __future__ import annotations

import json
import shutil
import time
from pathlib import Path

import pytest
from click.testing import CliRunner

from ms_migrate.frontends.cli import main
from tests.fixture_cases import FIXTURES

NOT_TEXT = "cell 1 has a source that is not text"
# A finding with no fix (MS101 leaves a module-level GradOperation alone), and one with a fix.
SNIPPET = "from mindspore.ops import GradOperation\ngrad = GradOperation(get_by_list=True)\n"
FIXABLE = 'import mindspore\nmindspore.set_context(device_target="CPU")\n'


def _run(tmp_path: Path, name: str, text: str, *args: str) -> tuple[int, str]:
    (tmp_path / name).write_text(text)
    shutil.copy(FIXTURES / "ms101" / "cell_get_by_list.py", tmp_path / "good.py")
    result = CliRunner().invoke(main, [*args, "--target-version", "2.8", str(tmp_path)])
    assert "ms.grad(" in (tmp_path / "good.py").read_text() or args[0] == "check"
    return result.exit_code, result.output


@pytest.mark.parametrize(
    ("body", "message"),
    [
        ("try:\n    pass\nexcept ValueError, error:\n    pass\n", "syntax error"),
        ("def f():\n    pass\nbreak\n", "syntax error: 'break' outside loop"),
        ("def f(a, a):\n    pass\n", "syntax error: duplicate argument 'a' in function definition"),
    ],
    ids=["python2-except", "break-outside-loop", "duplicate-argument"],
)
@pytest.mark.parametrize("command", ["upgrade", "check"])
def test_code_that_compiles_in_no_python_is_a_syntax_error(
    tmp_path: Path, body: str, message: str, command: str
) -> None:
    code, output = _run(tmp_path, "broken.py", FIXABLE + body, command)
    assert code == 2, output
    assert f"{tmp_path / 'broken.py'}:" in output and message in output
    assert "MSR099" not in output


@pytest.mark.parametrize("command", ["upgrade", "check"])
def test_a_file_with_findings_and_nothing_to_fix_is_not_compiled(tmp_path: Path, command: str) -> None:
    """What only compiling finds (`break` outside a loop) is Python's to report in a file that
    nothing will rewrite, as in a file with no finding: its findings are reported and it is left
    as it is. What ast.parse rejects is still a syntax error there."""
    code, output = _run(tmp_path, "quiet.py", SNIPPET + "break\n", command)
    assert code == 1, output
    assert f"{tmp_path / 'quiet.py'}:2:" in output and "syntax error" not in output
    assert (tmp_path / "quiet.py").read_text() == SNIPPET + "break\n"
    code, output = _run(tmp_path, "quiet.py", SNIPPET + "print 'x'\n", command)
    assert code == 2 and f"{tmp_path / 'quiet.py'}:3: syntax error" in output


@pytest.mark.parametrize(
    "deep",
    ["x = " + " + ".join(["a"] * 50_000) + "\n", "x = " + "f(" * 5_000 + "1" + ")" * 5_000 + "\n"],
    ids=["long-chain", "deep-calls"],
)
def test_a_deeply_nested_file_is_reported_quickly(tmp_path: Path, deep: str) -> None:
    started = time.monotonic()
    code, output = _run(tmp_path, "deep.py", SNIPPET + deep, "upgrade")
    assert time.monotonic() - started < 30
    assert code == 2
    deep_path = tmp_path / "deep.py"
    assert f"{deep_path}: too deeply nested to process" in output or f"{deep_path}:3: syntax error" in output


def test_a_chain_libcst_would_crawl_through_is_refused_before_libcst(tmp_path: Path) -> None:
    # Python parses 1,500 terms, but the rewrite would be slow and fragile at that depth.
    code, output = _run(tmp_path, "deep.py", FIXABLE + "x = " + " + ".join(["a"] * 1_500) + "\n", "upgrade")
    assert code == 2 and f"{tmp_path / 'deep.py'}: too deeply nested to process" in output


@pytest.mark.parametrize(
    ("document", "message"),
    [
        ('{"cells": ' + "[" * 100_000 + "]" * 100_000 + "}", "too deeply nested"),
        (json.dumps({"cells": [{"cell_type": "code", "source": [1]}]}), NOT_TEXT),
        (json.dumps({"cells": [{"cell_type": "code", "source": [None]}]}), NOT_TEXT),
    ],
    ids=["deep-json", "number-source", "null-source"],
)
def test_a_broken_notebook_is_reported_and_the_run_goes_on(
    tmp_path: Path, document: str, message: str
) -> None:
    code, output = _run(tmp_path, "lesson.ipynb", document, "upgrade")
    assert code == 2 and message in output and "Traceback" not in output


def test_an_unknown_encoding_cookie_is_named_once(tmp_path: Path) -> None:
    code, output = _run(tmp_path, "cookie.py", "# -*- coding: foobar -*-\n" + SNIPPET, "upgrade")
    assert code == 2 and f"{tmp_path / 'cookie.py'}:1: unknown encoding: foobar\n" in output
    assert output.count("unknown encoding") == 1, output


@pytest.mark.parametrize("literals", [400, 5_000], ids=["past-the-recursion-limit", "past-libcst-3000"])
def test_thousands_of_concatenated_literals_are_processed(tmp_path: Path, literals: int) -> None:
    # libcst refuses more than 3,000 adjacent literals and recursed once per literal; the run is
    # handed to it folded into one placeholder and comes back byte for byte.
    run = "TABLE = (\n" + "".join(f'    "row {index}"  # {index}\n' for index in range(literals)) + ")\n"
    legacy = (FIXTURES / "ms101" / "cell_get_by_list.py").read_text()
    expected = (FIXTURES / "ms101" / "cell_get_by_list.expected.py").read_text()
    code, output = _run(tmp_path, "table.py", run + legacy, "upgrade")
    assert code == 0, output
    assert (tmp_path / "table.py").read_text() == run + expected
    creation = legacy.splitlines().index("        self.grad = C.GradOperation(get_by_list=True)")
    site = run.count("\n") + creation + 1
    assert f"{tmp_path / 'table.py'}:{site}:1: MS101" in output


def test_only_a_file_with_findings_is_compiled(tmp_path: Path) -> None:
    """The speed floor's decision: a file no rule has a finding in is parsed, not compiled, so
    `break` outside a loop there is Python's to report; what ast.parse rejects is reported in
    every file that a rule reads."""
    quiet = "from mindspore.ops import GradOperation\n\n\ndef f():\n    pass\nbreak\n"
    code, output = _run(tmp_path, "quiet.py", quiet, "check")
    assert "quiet.py" not in output and code == 1  # good.py's own findings
    code, output = _run(tmp_path, "quiet.py", "from mindspore.ops import GradOperation\nprint 'x'\n", "check")
    assert code == 2 and f"{tmp_path / 'quiet.py'}:2: syntax error" in output
