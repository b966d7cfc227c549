"""MS102 beyond its examples and fixtures: the spellings it follows, the text it writes where a
stop_gradient spans lines, the imports it drops, and that it never rewrites MS101's output."""

from __future__ import annotations

import textwrap

import pytest

from ms_migrate.core.engine import migrate_text
from ms_migrate.facts.versions import Version
from ms_migrate.files import sources
from tests.fixture_cases import fixture_cases


def upgrade(text: str, target: str = "2.10") -> tuple[str, list[str]]:
    result = migrate_text(textwrap.dedent(text), Version.parse(target))
    compile(result.text, "<upgraded>", "exec")
    assert migrate_text(result.text, Version.parse(target)).text == result.text, "not a fixed point"
    return result.text, [item.code for item in result.diagnostics]


SPELLINGS = [
    ("import mindspore as ms\nfrom mindspore import ops\n", "ms.grad", "ops.stop_gradient"),
    ("import mindspore\nimport mindspore.ops as P\n", "mindspore.ops.grad", "P.stop_gradient"),
    ("from mindspore import grad\nfrom mindspore.ops import functional as F\n", "grad", "F.stop_gradient"),
    ("from mindspore.ops import grad, stop_gradient as sg\n", "grad", "sg"),
]


@pytest.mark.parametrize(("imports", "grad", "stop_gradient"), SPELLINGS)
def test_every_import_spelling(imports: str, grad: str, stop_gradient: str) -> None:
    source = (
        f"{imports}\n\ndef f(x):\n    return (x * x).sum(), {stop_gradient}(x)\n\n\n"
        f"grad_fn = {grad}(f, 0)\ngrads = grad_fn(x)\n"
    )
    text, codes = upgrade(source)
    assert codes == ["MS102"]
    assert "    return (x * x).sum(), x\n" in text
    assert f"grad_fn = {grad}(f, 0, has_aux=True)\ngrads = grad_fn(x)[0]\n" in text


def test_a_shadowed_stop_gradient_is_not_mindspore_s() -> None:
    source = """\
        import mindspore as ms
        from mindspore import ops


        def f(x, ops):
            return (x * x).sum(), ops.stop_gradient(x)


        grad_fn = ms.value_and_grad(f)
        """
    text, codes = upgrade(source)
    # Not MS102's to convert; and, its `ops` being unknown, MS203 sees a second output summed in.
    assert text == textwrap.dedent(source) and codes == ["MS203"]


def test_stop_gradient_over_several_lines_keeps_its_parentheses() -> None:
    source = """\
        import mindspore as ms
        from mindspore import ops


        def f(x):
            return (x * x).sum(), ops.stop_gradient(x +
                                                    1), ops.stop_gradient(
                x * 2
            )


        grad_fn = ms.value_and_grad(f, 0, has_aux=False)
        """
    text, codes = upgrade(source)
    assert codes == ["MS102"]
    assert "    return (x * x).sum(), (x +\n" + " " * 44 + "1), x * 2\n" in text
    assert "grad_fn = ms.value_and_grad(f, 0, has_aux=True)\n" in text
    assert "from mindspore import ops" not in text  # nothing else used it


def test_a_trailing_comma_over_several_lines_is_left_alone() -> None:
    source = """\
        import mindspore as ms
        from mindspore import ops


        def f(x):
            return (x * x).sum(), ops.stop_gradient(
                x
                + 1,
            )


        grad_fn = ms.value_and_grad(f)
        """
    text, codes = upgrade(source)
    assert text == textwrap.dedent(source) and codes == ["MSR031"]


def test_an_import_still_used_stays() -> None:
    source = """\
        import mindspore as ms
        from mindspore import ops


        def f(x):
            return ops.square(x).sum(), ops.stop_gradient(x)


        grad_fn = ms.value_and_grad(f)
        """
    text, _ = upgrade(source)
    assert "from mindspore import ops\n" in text and "return ops.square(x).sum(), x\n" in text


def test_before_2_0_nothing_changes() -> None:
    source = """\
        import mindspore as ms
        from mindspore import ops


        def f(x):
            return (x * x).sum(), ops.stop_gradient(x)


        grad_fn = ops.value_and_grad(f)
        """
    for target in ("1.8", "1.10"):
        text, codes = upgrade(source, target)
        assert "MS102" not in codes and "ops.stop_gradient(x)" in text


def test_grad_function_used_outside_its_class_is_left_alone() -> None:
    source = """\
        import mindspore as ms
        from mindspore import nn, ops


        def f(x):
            return (x * x).sum(), ops.stop_gradient(x)


        class Step(nn.Cell):
            def __init__(self):
                super().__init__()
                self.grad_fn = ms.grad(f)

            def construct(self, x):
                return self.grad_fn(x)


        step = Step()
        print(step.grad_fn(x))
        """
    text, codes = upgrade(source)
    assert text == textwrap.dedent(source) and codes == ["MSR032"]


def test_class_attributes_and_flat_unpacking_are_left_alone() -> None:
    """A grad function in a class body is reached as self.x, which a Name does not show; a value_and_grad
    result unpacked into three names raises already, and MS204 would rewrite it once has_aux is there."""
    source = """\
        import mindspore as ms
        from mindspore import nn, ops


        def f(x):
            return (x * x).sum(), ops.stop_gradient(x)


        vg = ms.value_and_grad(f)
        loss, aux, grads = vg(x)


        def g(x):
            return (x * x).sum(), ops.stop_gradient(x)


        class Step(nn.Cell):
            grad_fn = ms.grad(g)

            def construct(self, x):
                return self.grad_fn(x)
        """
    text, codes = upgrade(source)
    assert text == textwrap.dedent(source) and codes == ["MSR032", "MSR030"]


def test_a_suppressed_site_is_not_in_the_shared_fix() -> None:
    source = """\
        import mindspore as ms
        from mindspore import ops


        def f(x):
            return (x * x).sum(), ops.stop_gradient(x)


        def g(x):
            return (x * x).sum(), ops.stop_gradient(x * 2)


        vf = ms.value_and_grad(f, 0)
        gg = ms.grad(g, 0)  # ms-migrate: ignore[MS102]
        print(vf(x), gg(x))
        """
    text, codes = upgrade(source)
    assert codes == ["MS102"]
    assert "vf = ms.value_and_grad(f, 0, has_aux=True)\n" in text and "ops.stop_gradient(x * 2)" in text
    assert "gg = ms.grad(g, 0)  # ms-migrate: ignore[MS102]\nprint(vf(x), gg(x))\n" in text


def test_a_value_and_grad_function_may_be_used_anyhow() -> None:
    """value_and_grad returns ((out0, *aux), grads) with or without has_aux: its uses stay."""
    source = """\
        import mindspore as ms
        from mindspore import ops


        def train(x, run):
            def f(x):
                return (x * x).sum(), ops.stop_gradient(x)

            grad_fn = ms.value_and_grad(f)
            return run(grad_fn, x)
        """
    text, codes = upgrade(source)
    assert codes == ["MS102"] and "return run(grad_fn, x)\n" in text


def test_ms101_output_is_never_rewritten() -> None:
    """The engine applies every rule's fixes in one pass: a fix of MS102 on what MS101 wrote
    would fail the fixed-point check and discard the file's changes."""
    for case in fixture_cases():
        if case.expected is None or case.command != "upgrade":
            continue
        result = migrate_text(sources.read_source(case.expected).text, Version.parse(case.target))
        assert not [item for item in result.diagnostics if item.code == "MS102"], case.id
