"""Name resolution through imports and scopes, and import bookkeeping, on small inputs."""

from __future__ import annotations

import ast
from pathlib import Path

from ms_migrate.analysis.names import NameResolver
from ms_migrate.core.codes import all_reasons
from ms_migrate.core.engine import migrate_text
from ms_migrate.facts.versions import Version

CELL = """
class Step(nn.Cell):
    def __init__(self, network, optimizer):
        super().__init__()
        self.network = network
        self.network.set_grad()
        self.optimizer = optimizer
        self.grad = {creation}

    def construct(self, x, y):
        loss = self.network(x, y)
        grads = self.grad(self.network, self.optimizer.parameters)(x, y)
        self.optimizer(grads)
        return loss
"""


def upgrade(source: str, target: str = "2.10") -> str:
    return migrate_text(source, Version.parse(target)).text


def test_resolver_follows_every_import_form() -> None:
    module = ast.parse(
        "import mindspore\nimport mindspore.ops as P\nfrom mindspore.ops import composite as C\n"
        "from mindspore.ops import GradOperation as G\nimport mindspore as ms\n"
    )
    resolver = NameResolver.for_module(module)
    for spelling in (
        "P.GradOperation",
        "C.GradOperation",
        "G",
        "ms.ops.GradOperation",
        "mindspore.ops.composite.base.GradOperation",
    ):
        qualified = resolver.qualified_name(ast.parse(spelling, mode="eval").body)
        assert qualified is not None and qualified.endswith("GradOperation"), spelling


def test_function_parameter_shadows_module_alias() -> None:
    source = "import mindspore.nn as nn\nfrom mindspore.ops import composite as C\n" + CELL.format(
        creation="C.GradOperation(get_by_list=True)"
    ).replace("def __init__(self, network, optimizer)", "def __init__(self, network, optimizer, C=None)")
    result = migrate_text(source, Version(2, 10))
    assert result.text == source and not result.diagnostics


def test_import_used_elsewhere_is_kept_and_partial_from_import_is_trimmed() -> None:
    source = (
        "import mindspore.nn as nn\nfrom mindspore.ops import GradOperation, HyperMap\n"
        + CELL.format(creation="GradOperation(get_by_list=True)")
        + "\nMAP = HyperMap()\n"
    )
    output = upgrade(source)
    assert "from mindspore.ops import HyperMap\n" in output
    assert "GradOperation" not in output


def test_import_already_unused_before_is_not_touched() -> None:
    source = (
        "import numpy\nimport mindspore.nn as nn\nimport mindspore as ms\n"
        "from mindspore.ops import composite as C\n"
        + CELL.format(creation="C.GradOperation(get_by_list=True)")
    )
    output = upgrade(source)
    assert "import numpy\n" in output
    assert "from mindspore.ops import composite as C" not in output
    # (the call may be split over lines to fit 88 columns)
    assert "ms.value_and_grad(self.network,None,self.optimizer.parameters)(x,y)" in "".join(output.split())


def test_name_listed_in_dunder_all_keeps_its_import() -> None:
    source = (
        "import mindspore.nn as nn\nfrom mindspore.ops import GradOperation\n"
        "__all__ = ['GradOperation', 'Step']\n" + CELL.format(creation="GradOperation(get_by_list=True)")
    )
    assert "from mindspore.ops import GradOperation\n" in upgrade(source)


def test_new_alias_avoids_names_bound_anywhere() -> None:
    source = "import mindspore.nn as nn\nfrom mindspore.ops import composite as C\n" + CELL.format(
        creation="C.GradOperation(get_by_list=True)"
    ).replace("loss = self.network(x, y)", "ms = 1\n        loss = self.network(x, y)")
    output = upgrade(source)
    assert "import mindspore\n" in output and "mindspore.value_and_grad" in output


def test_forward_is_not_merged_across_a_call() -> None:
    source = "import mindspore.nn as nn\nfrom mindspore.ops import composite as C\n" + CELL.format(
        creation="C.GradOperation(get_by_list=True)"
    ).replace("loss = self.network(x, y)", "loss = self.network(x, y)\n        self.log(loss)")
    output = upgrade(source)
    assert "loss = self.network(x, y)" in output and "value_and_grad" not in output


def test_forward_merged_across_a_pure_alias() -> None:
    source = "import mindspore.nn as nn\nfrom mindspore.ops import composite as C\n" + CELL.format(
        creation="C.GradOperation(get_by_list=True)"
    ).replace("loss = self.network(x, y)", "loss = self.network(x, y)\n        params = self.weights")
    assert "loss, grads = ms.value_and_grad" in upgrade(source)


def test_every_left_alone_site_has_a_documented_code() -> None:

    source = "import mindspore.nn as nn\nfrom mindspore.ops import composite as C\n" + CELL.format(
        creation="C.GradOperation(get_by_list=flag)"
    )
    (finding,) = migrate_text(source, Version(2, 10)).diagnostics
    assert finding.code in all_reasons() and finding.line == 10


def test_multi_output_merge_notes_the_summed_gradient() -> None:
    from tests.fixture_cases import FIXTURES

    source = (FIXTURES / "ms101" / "multi_output_sum_note.py").read_text()
    codes = [finding.code for finding in migrate_text(source, Version(2, 10)).diagnostics]
    assert codes.count("MS101") == 1 and "MSN002" in codes


def test_type_checking_imports_are_not_used_at_run_time() -> None:
    source = (
        "from typing import TYPE_CHECKING\nimport mindspore.nn as nn\n"
        "from mindspore.ops import composite as C\n"
        "if TYPE_CHECKING:\n    import mindspore as ms\n"
        + CELL.format(creation="C.GradOperation(get_by_list=True)")
    )
    output = upgrade(source)
    assert "mindspore.value_and_grad(" in output and "ms.value_and_grad(" not in output.replace(
        "mindspore.", ""
    )
    assert "import mindspore\n" in output


def test_removed_import_keeps_its_comment_and_leaves_no_empty_block() -> None:
    source = (
        "import mindspore.nn as nn\n"
        "# 自动微分工具\n"
        "from mindspore.ops import composite as C\n"
        "try:\n"
        "    from mindspore.ops import GradOperation\n"
        "except ImportError:\n"
        "    GradOperation = None\n" + CELL.format(creation="C.GradOperation(get_by_list=True)")
    )
    output = upgrade(source)
    assert "# 自动微分工具\n" in output
    assert "from mindspore.ops import composite as C" not in output
    compile(output, "output", "exec")


def test_forward_merges_only_with_set_grad_on_the_network_itself() -> None:
    """PYNATIVE reuses a recorded forward only for a network whose set_grad() was called; without
    it the legacy step runs the forward twice, which one merged value_and_grad would not."""
    imports = "import mindspore.nn as nn\nfrom mindspore.ops import composite as C\n"
    cell = CELL.format(creation="C.GradOperation(get_by_list=True)")
    without = migrate_text(imports + cell.replace("        self.network.set_grad()\n", ""), Version(2, 10))
    assert "loss = self.network(x, y)\n        grads = ms.grad(" in without.text
    assert "MSN001" in [finding.code for finding in without.diagnostics]
    # `network.set_grad()` on the __init__ argument that becomes self.network counts too.
    on_argument = upgrade(imports + cell.replace("self.network.set_grad()", "network.set_grad()"))
    assert "loss, grads = ms.value_and_grad" in on_argument
    # A sub-cell's set_grad() changes what PYNATIVE GradOperation computes: left alone.
    on_sub_cell = migrate_text(
        imports + cell.replace("self.network.set_grad()", "self.network.backbone.set_grad()"), Version(2, 10)
    )
    assert on_sub_cell.text.count("GradOperation") == 1
    assert [finding.code for finding in on_sub_cell.diagnostics] == ["MSR016"]


def test_forward_that_overwrites_a_grad_input_is_not_merged() -> None:
    source = "import mindspore.nn as nn\nfrom mindspore.ops import composite as C\n" + CELL.format(
        creation="C.GradOperation(get_by_list=True)"
    ).replace("loss = self.network(x, y)", "y = self.network(x, y)")
    result = migrate_text(source, Version(2, 10))
    assert "value_and_grad" not in result.text
    assert [finding.code for finding in result.diagnostics] == ["MSR016"]


def test_a_suppressed_site_is_neither_rewritten_nor_reported() -> None:
    source = "import mindspore.nn as nn\nfrom mindspore.ops import composite as C\n" + CELL.format(
        creation="C.GradOperation(get_by_list=True)  # ms-migrate: ignore[MS101]"
    )
    result = migrate_text(source, Version(2, 10))
    assert result.text == source and result.diagnostics == []
    noqa = source.replace("# ms-migrate: ignore[MS101]", "# noqa: MS101")
    assert migrate_text(noqa, Version(2, 10)).text == noqa
    # Another code on the line suppresses nothing of MS101.
    other = source.replace("# ms-migrate: ignore[MS101]", "# noqa: E501")
    assert "value_and_grad" in migrate_text(other, Version(2, 10)).text


def test_a_suppressed_left_alone_reason_is_not_reported() -> None:
    source = "import mindspore.nn as nn\nfrom mindspore.ops import composite as C\n" + CELL.format(
        creation="C.GradOperation(get_by_list=flag)  # ms-migrate: ignore[MSR002]"
    )
    assert migrate_text(source, Version(2, 10)).diagnostics == []


def test_walking_statements_only_binds_what_walking_every_node_binds() -> None:
    """bound_in's fast form (statements only) is exact for code without `:=`: checked on every
    module and function of this repository's own code and fixtures."""
    import ast as ast_module

    from ms_migrate.analysis.names import FUNCTION_TYPES, bound_in

    root = Path(__file__).parent.parent
    checked = 0
    for path in [*root.glob("ms_migrate/**/*.py"), *root.glob("tests/fixtures/**/*.py")]:
        text = path.read_text(encoding="utf-8")
        if ":=" in text:
            continue
        try:
            tree = ast_module.parse(text)
        except SyntaxError:
            continue  # the bad-input fixtures
        functions = [node for node in ast_module.walk(tree) if isinstance(node, FUNCTION_TYPES)]
        bodies = [tree.body, *(function.body for function in functions)]
        for body in bodies:
            full, imports = bound_in(body)
            fast, fast_imports = bound_in(body, expressions=False)
            assert fast == full and fast_imports == imports, path
            checked += 1
    assert checked > 500


def test_the_names_a_new_import_must_avoid_are_known_from_the_text_as_from_the_tree() -> None:
    """`NamesOf` answers a name the text does not hold as a word without walking the tree; its
    answers are the walk's, for every identifier in the text and for names it lacks, in ASCII
    text and in text whose identifiers Python normalises (`ｍｓ` is `ms`)."""
    from ms_migrate.analysis.names import NamesOf, all_names, free_name

    for text in (
        "import mindspore as ms\nitems = [p.params for p in ms.x]\ndef f(msx, *, m_s=1): pass\n",
        "ｍｓ = 1\nprint(ms)\n",
    ):
        tree = ast.parse(text)
        names, walked = NamesOf(tree, text), all_names(tree)
        for name in {*text.replace("(", " ").replace(".", " ").split(), "ms", "mindspore", "mi", "x"}:
            assert (name in names) == (name in walked), name
        assert free_name("ms", names) == ("ms2" if "ms" in walked else "ms")
        assert "ms" in names or "ms2" in names  # what free_name gave is taken from then on
