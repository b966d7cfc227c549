"""MS208: in GRAPH_MODE, an inline lambda given to grad, or keywords to a grad function built
outside construct."""

from __future__ import annotations

import ast
from collections.abc import Iterable, Iterator

from ms_migrate.analysis.autodiff import AutodiffFile, GradSite
from ms_migrate.context import FileContext
from ms_migrate.diagnostics import Diagnostic, Severity, source_lines
from ms_migrate.facts.versions import Version
from ms_migrate.rules.base import Example, Examples, Rule, VersionRange

_GRAD_TOKENS = ("grad(", "GradOperation", "grad as")
GRAPH = "import mindspore as ms\n\nms.set_context(mode=ms.GRAPH_MODE)\n"


class GraphModeGradCall(Rule):
    """Two autodiff spellings that run in PYNATIVE mode and fail in GRAPH mode.

    - An inline lambda handed to `grad`, `value_and_grad` or a GradOperation where the call runs
      in Python (module level, `__init__`, a plain function): GRAPH mode compiles the lambda from
      its source line, finds the enclosing call there, and raises "TypeError: Parse Lambda
      Function Fail. Node type must be Lambda, but got Call". Inside `construct` or a `@jit`
      function the whole body is compiled and the lambda is fine; so is a lambda on a line of its
      own (`f = lambda x: ...`).
    - Keyword arguments to a function built by `grad` / `value_and_grad` outside `construct` and
      `@jit` (module level, `__init__`, a plain function): GRAPH mode rejects them ("got an
      unexpected keyword argument"), wherever the call is. Functions built by GradOperation and
      those built inside `construct` take keywords.

    Checked only in files that select GRAPH mode (`set_context(mode=GRAPH_MODE)` or `mode=0`,
    through any import of `mindspore` or `mindspore.context`) and no other mode. Both failures
    were checked on MindSpore 2.10 CPU and are listed for 2.7-2.10 in the project's design notes;
    older runtimes were not checked (a MindSpore 2.x notebook shows `grad(lambda ...)` running in
    GRAPH mode), so the rule runs for targets from 2.7.
    See https://www.mindspore.cn/tutorials/en/r2.8/compile/static_graph.html
    """

    code = "MS208"
    title = "GRAPH_MODE: inline lambda given to grad, or keywords to a grad function built outside construct"
    kind = "lint"
    severity = Severity.ERROR
    targets = VersionRange(low="2.7")
    prefilter = ("GRAPH_MODE", "mode=0", "mode = 0")
    examples = Examples(
        valid=(
            Example(GRAPH + "\n\ndef square(x):\n    return x * x\n\n\ngrads = ms.grad(square)(x)\n"),
            Example("import mindspore as ms\n\ngrads = ms.grad(lambda x: x * x)(x)\n"),
            Example(
                GRAPH + "if args.pynative:\n    ms.set_context(mode=ms.PYNATIVE_MODE)\n"
                "grads = ms.grad(lambda x: x * x)(x)\n"
            ),
            Example(
                GRAPH + "from mindspore import nn\n\n\nclass Step(nn.Cell):\n    def construct(self, x):\n"
                "        return ms.grad(lambda p: p * p)(x)\n"
            ),
        ),
        invalid=(
            Example(GRAPH + "grads = ms.grad(lambda x: x * x)(x)\n"),
            Example(
                "from mindspore import context, ops\n\ncontext.set_context(mode=context.GRAPH_MODE)\n"
                "grad_fn = ops.GradOperation()(lambda x: x * x)\n",
                "2.7",
            ),
            Example(
                GRAPH + "grad_fn = ms.value_and_grad(forward_fn, None, weights)\n\n\n@ms.jit\n"
                "def train_step(data, label):\n    return grad_fn(data, label=label)\n"
            ),
        ),
    )

    def applies_to(self, text: str, target: Version) -> bool:
        # Both a mode and a grad: a GRAPH_MODE file without autodiff is never parsed for this.
        return super().applies_to(text, target) and any(token in text for token in _GRAD_TOKENS)

    def check(self, ctx: FileContext) -> Iterable[Diagnostic]:
        analysis = AutodiffFile.of(ctx)
        modes = analysis.selected_modes()
        # A file that also selects PYNATIVE (or a mode the file does not spell out) may run the
        # site in either mode; which one depends on the order things run in.
        if not modes or any(mode != "graph" for _, mode in modes):
            return
        selected = modes[0][0]
        for site in analysis.sites():
            if analysis.may_be_compiled(site.call):
                continue
            if isinstance(site.fn, ast.Lambda) and not _on_its_own_lines(ctx, site.fn):
                yield self.diagnostic(
                    site.fn,
                    f"GRAPH_MODE (set on line {selected.lineno}) compiles this lambda from its source line, "
                    f"finds the {site.api} call there and raises TypeError: Parse Lambda Function Fail; "
                    f"define the function with def (or assign the lambda on a line of its own)",
                )
            if site.api != "GradOperation":
                yield from self._keywords(analysis, site, selected.lineno)

    def _keywords(self, analysis: AutodiffFile, site: GradSite, mode_line: int) -> Iterator[Diagnostic]:
        for call in analysis.calls_of(site.call):
            named = [keyword for keyword in call.keywords if keyword.arg is not None]
            if not named:
                continue
            keyword = named[0]
            yield self.diagnostic(
                keyword,
                f"GRAPH_MODE (set on line {mode_line}) rejects keyword arguments to a function built by "
                f"{site.api} outside construct / @jit (line {site.call.lineno}): this call raises "
                f"\"got an unexpected keyword argument '{keyword.arg}'\"; pass the arguments by position, or "
                f"build the gradient function inside construct",
            )


def _on_its_own_lines(ctx: FileContext, function: ast.Lambda) -> bool:
    """The lambda's lines hold nothing else, which is what GRAPH mode's parser needs."""
    lines = source_lines(ctx.text)[function.lineno - 1 : function.end_lineno]
    segment = ast.get_source_segment(ctx.text, function) or ""
    return " ".join("".join(lines).split()) == " ".join(segment.split())
