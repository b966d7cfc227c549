"""MS210 over a catalogue: what it flags through every spelling, what it leaves alone, the renames
it applies, the catalogue a target gets, and the prefilter that keeps it at `ast` speed.

Most cases run on a small catalogue written here, so that each kind of entry (a rename among
them, which MindSpore's own catalogues may lack) is there to test; the end-to-end tests at the
bottom use the committed catalogues generated from MindSpore.
"""

from __future__ import annotations

import ast
import json
import re
from pathlib import Path

import jsonschema
import pytest
from click.testing import CliRunner
from hypothesis import given, settings
from hypothesis import strategies as st

import ms_migrate.facts.deprecations as deprecations
from ms_migrate.context import FileContext
from ms_migrate.core.engine import rules_of_kind, run_rules
from ms_migrate.diagnostics import Diagnostic
from ms_migrate.facts.versions import Version
from ms_migrate.frontends.cli import main
from ms_migrate.rules.base import rule_for


@pytest.fixture(autouse=True)
def _screen_from_the_first_text(monkeypatch: pytest.MonkeyPatch) -> None:
    """The prefilter's screen is what these tests are about: used from the first text on, not
    after the texts a short run lets through on the word pattern alone."""
    import ms_migrate.rules.ms210_deprecated_api as ms210

    monkeypatch.setattr(ms210, "SCREEN_AFTER_TEXTS", 0)


ENTRIES = [
    {
        "names": ["mindspore.ops.identity", "mindspore.ops.functional.identity"],
        "kind": "api",
        "since": "2.0",
        "replacement": "mindspore.nn.Identity",
        "rename": False,
        "channel": "decorator",
    },
    {
        "names": ["mindspore.Tensor.ptp", "mindspore.common.tensor.Tensor.ptp"],
        "kind": "api",
        "since": "2.5",
        "replacement": None,
        "rename": False,
        "channel": "decorator",
    },
    {
        "names": ["mindspore.ops.old_add"],
        "kind": "api",
        "since": "2.3",
        "replacement": "mindspore.ops.add",
        "rename": True,
        "channel": "decorator",
    },
    {
        "names": ["mindspore.Tensor.old_sum"],
        "kind": "api",
        "since": "2.3",
        "replacement": "mindspore.Tensor.sum",
        "rename": True,
        "channel": "decorator",
    },
    {
        "names": ["mindspore.ops.Dropout"],
        "kind": "parameter",
        "parameter": "keep_prob",
        "since": "2.2",
        "replacement": "p",
        "rename": False,
        "channel": "warning",
    },
    {
        "names": ["mindspore.context.set_context", "mindspore.set_context"],
        "kind": "context-key",
        "parameter": "enable_graph_kernel",
        "since": "2.3",
        "replacement": "mindspore.set_context(graph_kernel_flags=...)",
        "rename": False,
        "channel": "context-table",
    },
    {
        "names": ["mindspore.common.old_api"],
        "kind": "module",
        "since": "2.3",
        "replacement": "mindspore.common.api",
        "rename": True,
        "channel": "module-redirect",
    },
    {
        "names": ["mindspore.train.late"],
        "kind": "api",
        "since": None,
        "replacement": None,
        "rename": False,
        "channel": "docstring",
    },
]


@pytest.fixture
def catalogue(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """These entries as the 2.9 catalogue, and the same minus the rename of old_add as 2.10."""
    folder = tmp_path / "deprecations"
    folder.mkdir()
    for version, entries in (("2.9", ENTRIES), ("2.10", ENTRIES[:2] + ENTRIES[3:])):
        data = {"mindspore": f"{version}.0", "generator": "test", "entries": entries}
        (folder / f"{version}.json").write_text(json.dumps(data), encoding="utf-8")
    monkeypatch.setattr(deprecations, "rules_folder", lambda name: folder)
    deprecations.catalogue_for.cache_clear()
    yield folder
    deprecations.catalogue_for.cache_clear()


def found(text: str, target: str = "2.9") -> list[Diagnostic]:
    assert_prefilter_keeps(text, Version.parse(target))
    return run_rules(text, Version.parse(target), [rule_for("MS210")], fix=False).diagnostics


def lines(text: str, target: str = "2.9") -> list[int]:
    return [item.line for item in found(text, target)]


def fixed(text: str, target: str = "2.9") -> str:
    assert_prefilter_keeps(text, Version.parse(target))
    return run_rules(text, Version.parse(target), [rule_for("MS210")]).text


def unfiltered(text: str, target: Version) -> list[Diagnostic]:
    """What the rule finds in ``text`` when its prefilter is not asked."""
    return list(rule_for("MS210").check(FileContext(text, target, fixes=False)))


def assert_prefilter_keeps(text: str, target: Version) -> None:
    """The prefilter lets through every text the rule finds something in, and only texts the
    catalogue's word pattern matches (the prefilter it replaced), so that no result changes."""
    catalogue = deprecations.catalogue_for(target)
    admitted = rule_for("MS210").applies_to(text, target)
    if catalogue is None or target not in rule_for("MS210").targets:
        assert not admitted
        return
    words = "mindspore" in text and catalogue.pattern.search(text) is not None
    assert words or not admitted, "the prefilter lets through a text the word pattern does not match"
    if words and not admitted:
        try:
            ast.parse(text)
        except SyntaxError:
            return
        assert unfiltered(text, target) == [], "the prefilter rejects a text with findings"


SPELLINGS = [
    "from mindspore import ops\nops.identity(x)\n",
    "import mindspore as ms\nms.ops.identity(x)\n",
    "import mindspore\nmindspore.ops.functional.identity(x)\n",
    "import mindspore.ops as P\nP.identity(x)\n",
    "from mindspore.ops import functional as F\nF.identity(x)\n",
    "from mindspore import ops as O\ny = [O.identity]\n",
]


@pytest.mark.parametrize("text", SPELLINGS)
def test_a_deprecated_api_is_flagged_through_every_import_spelling(catalogue: Path, text: str) -> None:
    (item,) = found(text)
    assert item.line == 2 and "mindspore.ops.identity" in item.message
    assert "since MindSpore 2.0" in item.message and "`mindspore.nn.Identity`" in item.message
    assert item.replacement == "mindspore.nn.Identity" and item.fix is None


def test_from_import_is_flagged_at_the_name_once(catalogue: Path) -> None:
    text = "from mindspore.ops import Tensor, identity as ident\n\nident(x)\nident(y)\n"
    (item,) = found(text)
    assert (item.line, item.col) == (1, 34)


@pytest.mark.parametrize(
    "text",
    [
        "from mindspore import nn\nnn.Identity()\n",
        "import mindspore as ms\n\n\ndef f(ops):\n    return ops.identity(x)\n",  # a parameter
        "import mindspore as ms\nimport numpy as ops\nops.identity(3)\n",  # another module
        "import mindspore as ms\nfrom mylib import ops\nops.identity(3)\n",
        "import mindspore as ms\nidentity = 1\nprint(identity)\n",
        "import mindspore as ms\nms.set_context(mode=ms.GRAPH_MODE)\n",
        "import mindspore as ms\ns = 'ops.identity'\n",
    ],
)
def test_what_is_not_mindspores_is_left_alone(catalogue: Path, text: str) -> None:
    assert found(text) == []


def test_tensor_methods_only_on_values_that_provably_are_tensors(catalogue: Path) -> None:
    text = (
        "import mindspore as ms\n"
        "from mindspore import Tensor\n"
        "t = Tensor([1.0])\n"
        "t.ptp()\n"  # 4: flagged
        "ms.Tensor([2.0]).ptp()\n"  # 5: flagged
        "u = ms.Tensor([1.0])\n"
        "u = u + 1\n"
        "u.ptp()\n"  # 8: rebound, not known
        "frame.ptp()\n"  # 9: unknown (a numpy array has ptp too)
        "\n\ndef f(a: Tensor, b, c: ms.Tensor):\n"
        "    d = Tensor(3)\n"
        "    return a.ptp() + b.ptp() + c.ptp() + d.ptp() + t.ptp()\n"  # 14: a, c, d and t
        "\n\ndef g(t):\n"
        "    return t.ptp()\n"  # 18: t is g's parameter here
    )
    assert lines(text) == [4, 5, 14, 14, 14, 14]


def test_keywords_context_keys_and_modules(catalogue: Path) -> None:
    text = (
        "import mindspore as ms\n"
        "from mindspore import context, ops\n"
        "import mindspore.common.old_api\n"  # 3: module
        "from mindspore.common.old_api import jit\n"  # 4: module
        "from mindspore.common import old_api\n"  # 5: module, imported by name
        "ms.set_context(mode=0, enable_graph_kernel=True)\n"  # 6
        "context.set_context(enable_graph_kernel=False)\n"  # 7
        "ops.Dropout(keep_prob=0.9)\n"  # 8
        "ops.Dropout(p=0.1)\n"
        "ms.common.old_api.jit\n"  # 10: through the module
        "mindspore.common.old_api.jit\n"  # 11: through the module too
        "api.jit\n"  # 12: `api` is not bound here
    )
    items = found(text)
    assert [item.line for item in items] == [3, 4, 5, 6, 7, 8, 10, 11]
    assert "keyword `keep_prob=` of `ops.Dropout`" in items[5].message
    assert "`set_context` key `enable_graph_kernel`" in items[3].message


def test_the_target_decides_what_is_deprecated(catalogue: Path) -> None:
    text = "from mindspore import ops\nops.identity(x)\nops.old_add(1, 2)\n"
    assert lines(text, "2.9") == [2, 3]
    assert lines(text, "2.10") == [2]  # 2.10's catalogue has no old_add entry
    assert lines(text, "2.2") == [2]  # older than every catalogue: only what 2.2 had deprecated
    assert lines(text, "1.10") == []
    assert lines("from mindspore.train import late\n", "2.8") == []  # no version: only from 2.9
    assert lines("from mindspore.train import late\n", "2.9") == [1]


def test_a_suppression_comment_keeps_a_use(catalogue: Path) -> None:
    text = "from mindspore import ops\nops.identity(x)  # ms-migrate: ignore[MS210]\nops.identity(y)\n"
    assert lines(text) == [3]


def test_drop_in_renames_are_applied_and_nothing_else(catalogue: Path) -> None:
    text = (
        "import mindspore as ms\n"
        "from mindspore import ops, Tensor\n"
        "from mindspore.ops import old_add\n"
        "import mindspore.common.old_api as api\n"
        "from mindspore.common.old_api import jit\n"
        "a = ops.old_add(1, 2) + ms.ops.old_add(3, 4)\n"
        "b = old_add(5, 6)\n"
        "c = ops.identity(a)\n"
        "t = Tensor([1.0])\n"
        "d = t.old_sum()\n"
    )
    assert fixed(text) == (
        "import mindspore as ms\n"
        "from mindspore import ops, Tensor\n"
        "from mindspore.ops import add as old_add\n"  # the name this module binds stays
        "import mindspore.common.api as api\n"
        "from mindspore.common.api import jit\n"
        "a = ops.add(1, 2) + ms.ops.add(3, 4)\n"
        "b = old_add(5, 6)\n"
        "c = ops.identity(a)\n"  # the replacement is not a drop-in: named, not applied
        "t = Tensor([1.0])\n"
        "d = t.sum()\n"
    )
    assert fixed(fixed(text)) == fixed(text)


def test_a_renamed_import_keeps_the_name_the_module_binds(catalogue: Path) -> None:
    # Another module may `from this import old_add`, and `__all__` names it: renaming the binding
    # would break both without a trace here, so the import is respelled and the binding kept.
    text = '__all__ = ["old_add"]\nfrom mindspore.ops import old_add\nadd = 3\nb = old_add(add, 6)\n'
    assert fixed(text) == text.replace("import old_add", "import add as old_add")
    aliased = "from mindspore.ops import old_add as plus\n\n\ndef f(old_add):\n    return plus(old_add)\n"
    assert fixed(aliased) == aliased.replace("import old_add as", "import add as")


def test_catalogue_selection(catalogue: Path) -> None:
    assert deprecations.available() == [Version(2, 9), Version(2, 10)]
    assert deprecations.catalogue_for(Version(2, 10)).mindspore == "2.10.0"
    assert deprecations.catalogue_for(Version(2, 9)).mindspore == "2.9.0"
    assert deprecations.catalogue_for(Version(1, 5)).mindspore == "2.9.0"


@settings(deadline=None, max_examples=60)  # a compile per example: slow on a loaded machine
@given(st.lists(st.from_regex(r"[a-z_][a-z0-9_]{0,6}", fullmatch=True), min_size=1, max_size=30), st.text())
def test_the_trie_pattern_matches_exactly_the_whole_words(words: list[str], text: str) -> None:
    pattern = deprecations.word_pattern(words)
    naive = re.compile(r"\b(?:" + "|".join(sorted(map(re.escape, words), key=len, reverse=True)) + r")\b")
    assert bool(pattern.search(text)) == bool(naive.search(text))
    for word in words:
        assert pattern.search(f"(Q.{word}(1)")
        assert not pattern.search(f"(Q.{word}Q9(1)")


# --- with the catalogues generated from MindSpore ---------------------------------------------


def test_sarif_output_validates_and_carries_the_replacement(tmp_path: Path) -> None:
    from tests.test_autodiff_lints import sarif_schema

    path = tmp_path / "uses.py"
    path.write_text("from mindspore import ops\n\nout = ops.identity(ops.ones((2,)))\n", encoding="utf-8")
    result = CliRunner().invoke(main, ["check", "--format", "sarif", "--target-version", "2.10", str(path)])
    assert result.exit_code == 1, result.output
    log = json.loads(result.stdout)
    jsonschema.validate(log, sarif_schema())
    (finding,) = [item for item in log["runs"][0]["results"] if item["ruleId"] == "MS210"]
    assert "nn.Identity" in finding["properties"]["replacement"]
    assert "2.0" in finding["message"]["text"] and "identity" in finding["message"]["text"]


def test_every_committed_catalogue_loads_for_its_version() -> None:
    versions = deprecations.available()
    assert [str(version) for version in versions] == ["2.7", "2.8", "2.9", "2.10"]
    for version in versions:
        catalogue = deprecations.catalogue_for(version)
        assert catalogue is not None and catalogue.mindspore.startswith(str(version))
        assert catalogue.apis and catalogue.modules is not None


def test_lint_rules_run_the_catalogue_in_check() -> None:
    assert "MS210" in {rule.code for rule in rules_of_kind(("lint",))}


def test_positions_after_non_ascii_text_on_the_line(catalogue: Path) -> None:
    text = 'from mindspore import ops\nlabel = "标签"; out = ops.identity(label)  # 恒等\nops.identity(1)\n'
    prefix = len('label = "标签"; out = ')  # characters, as editors, ruff and SARIF count, not UTF-8 bytes
    assert [(item.line, item.col) for item in found(text)] == [(2, prefix), (3, 0)]


# --- the prefilter: never a file the rule finds something in ------------------------------------

TRICKY_SPELLINGS = [
    "import mindspore.ops as P\ny = (P\n     .identity)(x)\n",  # a chain broken over lines
    "import mindspore.ops as P\ny = (P.  # why\n     # more\n     identity)(x)\n",
    "import mindspore.ops as P\ny = P.\\\n    identity(x)\n",  # a line continuation
    "import mindspore.ops as P\ny = P . identity(x)\n",
    "from mindspore import ops as O\ny = f'{O.identity(x)}'\n",
    "from mindspore.ops import (\n    # ignore (this)\n    Tensor,\n    identity,\n)\n",
    "from mindspore.ops import Tensor, \\\n    identity\n",
    "def f():\n    from mindspore.ops import identity\n    return identity\n",  # a local import
    "import mindspore.common.old_api\n",
    "from mindspore . common.old_api import jit\n",
    "import mindspore as ms\nms.common.old_api.jit\n",
    "from mindspore import ops\nops.Dropout(keep_prob  # the old name\n            =0.9)\n",
    "from mindspore import ops\nops.Dropout(\n    keep_prob \\\n    = 0.9)\n",
    "from mindspore.context import set_context as sc\nsc(enable_graph_kernel=True)\n",
    "import mindspore as ms\n\n\ndef f(a: ms.Tensor):\n    return a.ptp()\n",
    "from mindspore import Tensor\nTensor([1.0]).ptp()\n",
    "import mindspore as ms\r\nms.ops.identity(x)\r\n",  # CRLF
    # The owner bound by `as` on another line of a parenthesised import, or before a gap.
    "from mindspore.ops import (\n    functional\n    as\n    Fn,\n)\nFn.identity(x)\n",
    "from mindspore.ops import functional as \\\n    Fn\nFn .identity(x)\n",
    "import mindspore.ops as P\ny = [P][0].identity(x) if 0 else P\t.identity(x)\n",
    # Python reads `ｉｄｅｎｔｉｔｙ` as `identity` (NFKC); the word pattern finds the comment's.
    "import mindspore.ops as P\n# 中文注释，不是代码。\ny = (P  # identity\n     .ｉｄｅｎｔｉｔｙ)(x)\n",
]


@pytest.mark.parametrize("text", TRICKY_SPELLINGS)
def test_the_prefilter_keeps_every_spelling_the_rule_flags(catalogue: Path, text: str) -> None:
    assert unfiltered(text, Version(2, 9)) and found(text)


@pytest.mark.parametrize(
    "text",
    [
        "import mindspore as ms\n# identity, keep_prob and ptp are deprecated\n",  # in comments only
        "import mindspore as ms\nidentity = keep_prob = 1\n",  # no call takes that keyword here
        "import mindspore as ms\nimport numpy as np\nspread = np.ptp(x)\n",  # no Tensor anywhere
        "import mindspore as ms\nms.ops.Dropout(p=0.5) if keep_prob == 1 else None\n",
        # After a dot, but owned by what no import binds: the rule resolves chains by imports.
        "import mindspore as ms\n\n\nclass Net:\n    def go(self, x):\n        return self.identity(x)\n",
        "import mindspore as ms\nimport numpy as np\ny = np.linalg.identity(3)\n",
    ],
)
def test_the_prefilter_passes_over_words_that_cannot_be_flagged(catalogue: Path, text: str) -> None:
    assert deprecations.catalogue_for(Version(2, 9)).pattern.search(text)
    assert not rule_for("MS210").applies_to(text, Version(2, 9))


def test_the_prefilter_keeps_the_rules_own_examples() -> None:
    rule = rule_for("MS210")
    for example in (*rule.examples.valid, *rule.examples.invalid):
        assert_prefilter_keeps(example.code, Version.parse(example.target))


def _spelled_uses(qualified: str) -> list[tuple[str, str]]:
    """(import, the module's local name) pairs that bind the module part of ``qualified``."""
    module = qualified.rpartition(".")[0]
    parent, _, last = module.rpartition(".")
    pairs = [(f"import {module} as X", "X"), ("import mindspore", module)]
    if parent:
        pairs += [(f"from {parent} import {last}", last), (f"from {parent} import {last} as Y", "Y")]
    return pairs


_ATTRIBUTE_GAPS = [
    ".",
    " . ",
    ".\\\n    ",
    "\n    .",
    ".  # a comment (with a dot.)\n    ",
    "  # c\n    # d\n    .",
]
_KEYWORD_GAPS = ["=", " = ", "\n    =", "  # a comment = not this\n    =", " \\\n    ="]
_NOISE = [
    "",
    "# 中文注释：不是代码。\n",
    "s = 'a string with words: cast, identity, device_id='\n",
    "变量 = 1\n",
]


@st.composite
def mindspore_snippets(draw: st.DrawFn) -> tuple[str, Version]:
    """Code using something the 2.10 catalogue deprecates, in one of the spellings the rule
    follows: attribute chains through aliases and over lines, imports (local ones too, with
    parenthesised names and continuations), keywords, Tensor methods; or near misses of them."""
    target = Version(2, 10)
    catalogue = deprecations.catalogue_for(target)
    kind = draw(st.sampled_from(["attribute", "import", "keyword", "method", "module"]))
    gap = draw(st.sampled_from(_ATTRIBUTE_GAPS))
    if kind == "attribute":
        name = draw(st.sampled_from(sorted(catalogue.apis)))
        head, local = draw(st.sampled_from(_spelled_uses(name)))
        code = f"{head}\ny = ({local}{gap}{name.rpartition('.')[2]})\n"
    elif kind == "import":
        name = draw(st.sampled_from(sorted([*catalogue.apis, *catalogue.modules])))
        module, _, word = name.rpartition(".")
        spelled = draw(
            st.sampled_from(
                [
                    f"from {module} import {word}",
                    f"from {module} import {word} as z",
                    f"from {module} import (\n    # a comment)\n    a,\n    {word},\n)",
                    f"from {module} import a, \\\n    {word}",
                    f"def f():\n    from {module} import {word}\n    return 1",
                ]
            )
        )
        code = spelled + "\n"
    elif kind == "keyword":
        callable_, keyword = draw(st.sampled_from(sorted(catalogue.parameters)))
        equals = draw(st.sampled_from(_KEYWORD_GAPS))
        module, _, last = callable_.rpartition(".")
        if "Tensor" in callable_.split("."):
            code = f"from mindspore import Tensor\nt = Tensor([1.0])\nt.{last}({keyword}{equals}1)\n"
        else:
            head, local = draw(st.sampled_from(_spelled_uses(callable_)))
            code = f"{head}\n{local}{gap}{last}(\n    {keyword}{equals}1)\n"
    elif kind == "method":
        method = draw(st.sampled_from(sorted(catalogue.tensor_methods)))
        code = draw(
            st.sampled_from(
                [
                    f"from mindspore import Tensor\nt = Tensor([1.0])\nt{gap}{method}()\n",
                    f"import mindspore as ms\nms.Tensor([1.0]){gap}{method}()\n",
                    f"import mindspore as ms\n\n\ndef f(a: ms.Tensor):\n    return (a{gap}{method})\n",
                ]
            )
        )
    else:
        name = draw(st.sampled_from(sorted(catalogue.modules)))
        code = draw(
            st.sampled_from(
                [f"import {name}\n", f"import {name} as m\n", f"import mindspore\nx = ({name}{gap}a)\n"]
            )
        )
    if draw(st.booleans()):  # a near miss: the word, but not where the rule looks
        code = code.replace(".", "_", 1) if draw(st.booleans()) else code.replace("=", "==", 1)
    text = draw(st.sampled_from(_NOISE)) + code + draw(st.sampled_from(_NOISE))
    return text.replace("\n", draw(st.sampled_from(["\n", "\r\n", "\r"]))), target


@settings(deadline=None, max_examples=300)
@given(mindspore_snippets())
def test_the_prefilter_keeps_what_the_real_catalogue_flags(snippet: tuple[str, Version]) -> None:
    assert_prefilter_keeps(*snippet)


@pytest.mark.parametrize("newline", ["\n", "\r\n", "\r"])
def test_sites_are_found_and_renamed_whatever_ends_the_lines(catalogue: Path, newline: str) -> None:
    text = newline.join(["from mindspore import ops", "", "# \u00e9t\u00e9", "y = ops.old_add(1, 2)", ""])
    assert lines(text) == [4]
    assert fixed(text) == text.replace("ops.old_add", "ops.add")


_PIECES = [*"ab_ (.)\n", "é", "ops", "identity", "set_context", "Tensor"]


@settings(deadline=None, max_examples=200)
@given(st.lists(st.sampled_from(_PIECES), max_size=12).map("".join))
def test_a_short_runs_first_texts_are_let_through_as_the_word_pattern_would(text: str) -> None:
    """The first texts of a process are screened, and their catalogue words found, by their
    words, not the compiled pattern: the same answers, for the catalogues the tool ships (each of
    whose words is made of word characters, which the screen relies on)."""
    import ms_migrate.rules.ms210_deprecated_api as ms210

    asked = ms210._texts_asked
    try:
        for version in deprecations.available():
            catalogue = deprecations.catalogue_for(version)
            assert catalogue is not None
            assert all(re.fullmatch(r"\w+", word) for word in catalogue.words)
            words = sorted(catalogue.words)[:3]
            for probe in (text, text + words[0], f"x.{words[1]}(1)", f"{words[2]}_more"):
                ms210._texts_asked = ms210.SCREEN_AFTER_TEXTS + 1
                positions = ms210._matched_positions(probe, catalogue)
                ms210._texts_asked = ms210.SCREEN_AFTER_TEXTS - 1  # the short run's path
                expected = catalogue.pattern.search(probe) is not None
                assert ms210.may_be_flagged(probe, catalogue) == expected, probe
                assert ms210._matched_positions(probe, catalogue) == positions, probe
    finally:
        ms210._texts_asked = asked


def test_a_rename_the_file_cannot_spell_yet_brings_its_import() -> None:
    """`P.TensorAdd` with only `operations as P` imported: `mindspore.ops.Add` needs a name for
    mindspore, which the fix imports (it was left unfixed, with no reason given); `P` goes only
    where nothing else uses it."""
    rule = rule_for("MS210")
    head = "from mindspore.ops import operations as P\n\nadd = P.TensorAdd()\n"
    assert run_rules(head, Version(2, 10), [rule]).text == "import mindspore as ms\n\nadd = ms.ops.Add()\n"
    kept = head + "relu = P.ReLU()\n"
    imports = "import mindspore as ms\nfrom mindspore.ops import operations as P\n"
    assert run_rules(kept, Version(2, 10), [rule]).text == imports + "\nadd = ms.ops.Add()\nrelu = P.ReLU()\n"
    taken = "from mindspore.ops import operations as P\nms = 1\nmindspore = 2\n\nadd = P.TensorAdd()\n"
    (finding,) = run_rules(taken, Version(2, 10), [rule]).diagnostics
    assert finding.fix is None and finding.message.endswith("(not fixed: no free name for mindspore)")


MS_FUNCTION = "from mindspore.common.api import ms_function\n\n\n"


def test_a_module_is_not_moved_under_a_name_the_target_has_in_neither() -> None:
    """`ms_function` is in neither api module of 2.10: moved, the import would fail as before,
    and MS211 would no longer say so."""
    text = MS_FUNCTION + "def body(x):\n    return x\n\n\ng = ms_function(body, input_signature=None)\n"
    result = run_rules(text, Version(2, 10), [rule_for("MS210"), rule_for("MS211")])
    assert result.text == text
    messages = {item.code: item.message for item in result.diagnostics}
    assert messages["MS210"].endswith("(not fixed: `ms_function` is not in MindSpore 2.10)")
    assert "`mindspore.common.api.ms_function` is not in MindSpore 2.10" in messages["MS211"]


def test_a_module_moves_once_the_name_it_was_waiting_for_is_renamed() -> None:
    """MS211 renames the import to `jit as ms_function` on the first pass; MS210 moves the module
    on the next, and its finding is reported fixed."""
    text = MS_FUNCTION + "@ms_function\ndef body(x):\n    return x\n"
    result = run_rules(text, Version(2, 10), [rule_for("MS210"), rule_for("MS211")])
    assert result.text.startswith("from mindspore.graph.api import jit as ms_function\n")
    assert sorted(item.code for item in result.fixed) == ["MS210", "MS211"]
    assert all(item.fixable and "not fixed" not in item.message for item in result.diagnostics)


def test_a_site_fixed_on_a_later_pass_is_told_apart_from_another_left_with_its_reason() -> None:
    text = (
        "import mindspore as ms\n\nx = ms.ops.ones(2) + 1\n"
        'ms.set_context(device_target="CPU")\n'
        "from mindspore.common.api import ms_function\n\n\n@ms_function\ndef body(x):\n    return x\n"
    )
    result = run_rules(text, Version(2, 10), [rule_for("MS210"), rule_for("MS211")])
    assert "from mindspore.graph.api import jit as ms_function\n" in result.text
    assert 'ms.set_context(device_target="CPU")\n' in result.text
    by_line = {(item.code, item.line): item for item in result.diagnostics}
    assert not by_line[("MS210", 4)].fixable
    assert "(not fixed: set_device must come before any kernel runs" in by_line[("MS210", 4)].message
    assert by_line[("MS210", 5)].fixable and "not fixed" not in by_line[("MS210", 5)].message
