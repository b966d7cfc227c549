"""MS210: a MindSpore API, keyword, module or `set_context` key that the target deprecates."""

from __future__ import annotations

import ast
import bisect
import re
import unicodedata
from collections import Counter
from collections.abc import Iterable, Iterator
from dataclasses import replace
from functools import cached_property
from pathlib import Path
from typing import Optional, Union

from ms_migrate.analysis.kernels import first_risk
from ms_migrate.analysis.names import (
    FUNCTION_TYPES,
    SCOPE_TYPES,
    NamesOf,
    Scope,
    dotted_name,
    found_after,
    module_reference,
)
from ms_migrate.analysis.project import ProjectIndex
from ms_migrate.analysis.walk import child_nodes, lines_naming, walk, walk_lines
from ms_migrate.context import FileContext
from ms_migrate.diagnostics import Diagnostic, Edit, Fix, Severity, line_of, line_starts, source_lines
from ms_migrate.facts.deprecations import (
    TENSOR_CLASSES,
    Catalogue,
    Deprecation,
    catalogue_for,
    word_alternation,
)
from ms_migrate.facts.release_notes import changes_reaching
from ms_migrate.facts.releases import api_facts
from ms_migrate.facts.versions import Version
from ms_migrate.rewrite.import_changes import released_name
from ms_migrate.rewrite.set_device import (
    DEVICE_KEYS,
    SET_CONTEXT,
    device_id_only,
    exclusive_paths,
    in_loop,
    merge_device_pair,
    split_set_context,
)
from ms_migrate.rewrite.text_edits import column, source_of
from ms_migrate.rules.base import Example, Examples, Rule

Chain = Union[ast.Name, ast.Attribute]


class DeprecatedApi(Rule):
    """A use of something the target MindSpore deprecates, from the catalogue of that version.

    Deprecated APIs still run, with a warning in MindSpore's log, until a release removes them;
    the catalogue says since when, and what to use instead. It is generated from MindSpore itself
    (`ms-migrate catalogue build`, see rules/deprecations/README.md) out of five channels: the
    `@deprecated` decorator, `mark_deprecated` module redirects, warnings in the code that say
    "deprecated" or "will be removed", the deprecated `set_context` keys, and docstrings.

    Flagged through any import alias: attribute chains (`ops.identity`), `from ... import`,
    Tensor methods on values that provably are Tensors (built by `Tensor(...)` and bound once, or a
    parameter annotated `Tensor`), deprecated keywords, `set_context` keys, and imports of
    deprecated modules. A local name that shadows an import is not followed.

    Fix safety: exact, and offered only where the catalogue proves a drop-in rename (the
    replacement is the same object, or has the same signature), spelled through the file's own
    imports or an `import mindspore as ms` the fix adds (a module is not moved while the file
    takes a name from it that the target has in neither module, `ms_function`: the import would
    fail as before, and MS211 would no longer report it); and for
    `set_context(device_target=..., device_id=...)`, where
    it is the only call that sets the device on any path through the file (one call, or one per
    branch of an `if`), as `set_context(...)` plus `set_device(target, id)`; and for the target set
    by one call and the id by the next statement (alone, or first under an `if`), as one
    `set_device(target, id)` per path (rules/releases/proofs.json: the same context on both
    releases). set_device raises once a kernel has run, where set_context took the device
    (measured on 2.7-2.10), so the device must be set before anything that may run one: in its
    function, only argument parsing, environment and path helpers, logging, MindSpore's
    settings, objects of MindSpore's classes, calls into libraries that do not import MindSpore
    (numpy, easydict, yaml), and functions and classes made of those (the file's own, or another
    file's of the run: `get_config()` of src/config.py) may come first, and a function's calls in
    the file are looked at the same way (ms_migrate/analysis/kernels.py); otherwise the finding
    says which line may run one.
    Any other replacement is named in the message, never applied.
    See https://www.mindspore.cn/docs/en/master/api_python/mindspore.ops.html and the release
    notes of each version.
    """

    code = "MS210"
    title = "deprecated MindSpore API"
    kind = "lint"
    release_fix = True
    severity = Severity.WARNING
    examples = Examples(
        valid=(
            Example("from mindspore import nn\nidentity = nn.Identity()\n"),
            Example("import mindspore as ms\n\n\ndef f(ops):\n    return ops.identity(1)\n"),
            Example("import mindspore as ms\nms.set_context(mode=ms.GRAPH_MODE)\n"),
            Example("from mindspore import ops\nout = ops.identity(x)\n", "1.10"),
        ),
        invalid=(
            Example("from mindspore import ops\nout = ops.identity(x)\n"),
            Example("import mindspore.ops as P\nout = P.identity(x)\n"),
            Example("from mindspore.ops import identity\n"),
            Example("import mindspore as ms\nt = ms.Tensor([1.0, 2.0])\nspread = t.ptp()\n"),
            Example(
                "import mindspore as ms\n"
                "ms.set_context(mode=ms.GRAPH_MODE, device_target='CPU', device_id=0)\n",
                fixed="import mindspore as ms\nms.set_context(mode=ms.GRAPH_MODE)\nms.set_device('CPU', 0)\n",
            ),
            # set_device takes one device per process: the target and then the id become one call.
            Example(
                "import mindspore as ms\n"
                "ms.set_context(mode=ms.GRAPH_MODE, device_target=target)\n"
                "if target == 'Ascend':\n"
                "    ms.set_context(device_id=1)\n",
                fixed="import mindspore as ms\n"
                "ms.set_context(mode=ms.GRAPH_MODE)\n"
                "if target == 'Ascend':\n"
                "    ms.set_device(target, 1)\n"
                "else:\n"
                "    ms.set_device(target)\n",
            ),
            # Code between the two may need the target set (a distributed init): left as it is.
            Example(
                "from mindspore import context\n"
                "from mindspore.communication import init\n"
                "context.set_context(device_target='Ascend')\n"
                "init()\n"
                "context.set_context(device_id=1)\n"
            ),
            # set_device raises once a kernel has run, where set_context took the device: a device
            # set after code that may run one (a network whose __init__ computes) is left.
            Example(
                "import mindspore as ms\n"
                "from model import build_model\n"
                "model = build_model()\n"
                "ms.set_context(device_target='GPU')\n"
            ),
        ),
    )

    def applies_to(self, text: str, target: Version) -> bool:
        if target not in self.targets or "mindspore" not in text:
            return False
        catalogue = catalogue_for(target)
        return catalogue is not None and may_be_flagged(text, catalogue)

    def check(self, ctx: FileContext) -> Iterable[Diagnostic]:
        catalogue = catalogue_for(ctx.target)
        if catalogue is None:
            return
        yield from _Finder(self, ctx, catalogue).findings()


class _Finder:
    """One pass over the parts of the tree that hold a catalogue word: the byte pattern's matches
    give the lines, and a statement or expression spanning none of them is never entered."""

    def __init__(self, rule: DeprecatedApi, ctx: FileContext, catalogue: Catalogue) -> None:
        self.rule, self.ctx, self.catalogue = rule, ctx, catalogue
        self.tree = ctx.tree
        self.resolver = ctx.resolver
        self.lines = source_lines(ctx.text)
        self.hits = _matched_positions(ctx.text, catalogue)
        self._tensors: dict[int, set[str]] = {}
        self._tensor_candidates: dict[str, bool] = {}
        self._device_facts: Optional[tuple[int, Optional[ast.Call], bool]] = None
        self._device_parents: dict[ast.AST, ast.AST] = {}  # of the nodes _device_settings walked
        self._risks: dict[int, Optional[str]] = {}  # what may run a kernel before a device setting

    # --- what is reported --------------------------------------------------------------------

    def findings(self) -> Iterator[Diagnostic]:
        stack: list[tuple[ast.AST, ast.AST, list[Scope]]] = [(self.tree, self.tree, [])]
        while stack:
            node, parent, scopes = stack.pop()
            if isinstance(node, (ast.Import, ast.ImportFrom)):
                yield from self._import(node)
                continue
            if isinstance(node, ast.Attribute) and isinstance(node.ctx, ast.Load):
                if not (isinstance(parent, ast.Attribute) and parent.value is node):
                    found = self._chain(node, scopes)
                    if found is not None:
                        yield found
            elif isinstance(node, ast.Call):
                yield from self._keywords(node, parent, scopes)
            inner = [node, *scopes] if isinstance(node, SCOPE_TYPES) else scopes
            children = [child for child in _children(node) if self._may_hold_a_hit(child)]
            stack.extend((child, node, inner) for child in reversed(children))

    def _may_hold_a_hit(self, node: ast.AST) -> bool:
        start = getattr(node, "lineno", None)
        if start is None:
            return True  # arguments, comprehensions and the like: their parts have positions
        begin = start << _LINE_SHIFT | node.col_offset  # type: ignore[attr-defined]
        if isinstance(node, _DECORATED):
            for decorator in node.decorator_list:
                begin = min(begin, decorator.lineno << _LINE_SHIFT | decorator.col_offset)
        end = (node.end_lineno or start) << _LINE_SHIFT | (node.end_col_offset or 0)  # type: ignore[attr-defined]
        index = bisect.bisect_left(self.hits, begin)
        return index < len(self.hits) and self.hits[index] < end

    def _import(self, node: Union[ast.Import, ast.ImportFrom]) -> Iterator[Diagnostic]:
        if isinstance(node, ast.Import):
            for alias in node.names:
                entry = self.catalogue.module_of(alias.name)
                if entry is not None:
                    fix = self._module_fix(alias, entry)
                    why = fix if isinstance(fix, str) else ""
                    yield self._report(alias, entry, f"`import {alias.name}`", None if why else fix, why)  # type: ignore[arg-type]
            return
        if node.level or not node.module:
            return
        module = self.catalogue.module_of(node.module)
        if module is not None:
            fix = self._from_module_fix(node, module)
            why = fix if isinstance(fix, str) else ""
            yield self._report(node, module, f"`from {node.module} import`", None if why else fix, why)  # type: ignore[arg-type]
            return
        for alias in node.names:
            qualified = f"{node.module}.{alias.name}"
            entry = self.catalogue.apis.get(qualified) or self.catalogue.modules.get(qualified)
            if entry is not None:
                fix = self._import_rename_fix(node, alias, entry)
                yield self._report(alias, entry, "", fix)

    def _chain(self, node: Chain, scopes: list[Scope]) -> Optional[Diagnostic]:
        if not isinstance(node, ast.Attribute):
            return None  # a bare name is reported at its import
        dotted = dotted_name(node)
        root = (dotted or "").partition(".")[0]
        binding = self.resolver.imports.get(root)
        if binding is not None:
            # What the chain names if no local shadows the import: checked first, as resolving
            # through the scopes costs more and most chains name nothing deprecated.
            qualified = f"{binding.qualified}.{dotted.partition('.')[2]}"  # type: ignore[union-attr]
            entry = self.catalogue.apis.get(qualified)
            through = None if entry else self.catalogue.module_of(qualified)
            if through is not None and self.catalogue.module_of(binding.qualified) is not None:
                through = None  # an import of the deprecated module itself: reported there
            if (entry or through) and self.resolver.is_free(root, scopes):
                if entry is not None:
                    fix = self._use_fix(node, entry, scopes)
                    why = fix if isinstance(fix, str) else ""
                    return self._report(node, entry, f"`{dotted}`", None if why else fix, why)  # type: ignore[arg-type]
                return self._report(node, through, f"`{dotted}`")  # type: ignore[arg-type]
            if node.attr not in self.catalogue.tensor_methods or self.resolver.is_free(root, scopes):
                return None  # an attribute of an import, so not a method of a Tensor value
        entry = self.catalogue.tensor_methods.get(node.attr)
        if entry is not None and self._is_tensor(node.value, scopes):
            return self._report(node, entry, f"Tensor method `.{node.attr}()`", self._method_fix(node, entry))
        return None

    def _keywords(self, call: ast.Call, statement: ast.AST, scopes: list[Scope]) -> Iterator[Diagnostic]:
        words = self.catalogue.words
        if not any(keyword.arg in words for keyword in call.keywords):
            return
        callees = []
        qualified = self.resolver.qualified_name(call.func)
        if qualified in self.catalogue.callables and self.resolver.qualified_name(call.func, scopes):
            callees.append(qualified)
        if (
            isinstance(call.func, ast.Attribute)
            and any(
                (call.func.attr, keyword.arg) in self.catalogue.tensor_keywords for keyword in call.keywords
            )
            and self._is_tensor(call.func.value, scopes)
        ):
            callees += [f"{cls}.{call.func.attr}" for cls in TENSOR_CLASSES]
        split = self._set_device_fix(statement, scopes) if set(callees) & set(SET_CONTEXT) else ""
        for keyword in call.keywords:
            for callee in callees:
                entry = self.catalogue.parameters.get((callee, keyword.arg or ""))
                if (
                    entry is not None
                    and keyword.arg in _OWN_RULES
                    and set(entry.names) & _OWN_RULES[keyword.arg]
                ):
                    break
                if entry is not None:
                    device_key = keyword.arg in DEVICE_KEYS
                    fix = split if device_key and isinstance(split, Fix) else None
                    why = split if device_key and isinstance(split, str) else ""
                    yield self._report(keyword, entry, "", fix, why)
                    break

    def _set_device_fix(self, statement: ast.AST, scopes: list[Scope]) -> Union[Fix, str]:
        """`set_context(device_target=..., device_id=...)` split into `set_context(...)` and
        `set_device(...)` (rewrite/set_device.py), one fix for both keys; only while the pair's
        proof (rules/releases/proofs.json) says the two leave the same context."""
        facts = api_facts()
        if facts is None or facts.proven.get((SET_CONTEXT[1], "mindspore.set_device")) != "equal":
            return "the pair is not proven"
        settings, looped, exclusive = self._device_layout()
        if looped is not None:
            return f"the device is set inside a loop (line {looped.lineno}): set_device takes one per process"
        pair = self._device_pair(statement) if settings == 2 and not exclusive else None
        if settings != 1 and pair is None and not exclusive:
            # set_device takes one device per process ("The 'mindspore.set_device' can not be
            # modified", 2.10), where set_context took a new device id each time.
            return f"this file sets the device {settings} times, and set_device takes one per process"
        first = pair[0] if pair is not None else statement
        if id(first) not in self._risks:
            self._risks[id(first)] = first_risk(
                self.tree, self.ctx.text, first, self.resolver, self._definition
            )
        risk = self._risks[id(first)]
        if risk is not None:
            # set_device raises once a kernel has run, where set_context took the device (2.7-2.10).
            return f"set_device must come before any kernel runs, and {risk}"
        reference = module_reference(self.resolver, self.names, "mindspore", scopes)
        if reference is None:
            return "no free name for mindspore"
        if pair is not None:
            edits = merge_device_pair(*pair, self.lines, reference.expression)
        else:
            edits = split_set_context(statement, self.lines, reference.expression)
        if isinstance(edits, str):
            return f"the file's two device settings cannot be merged: {edits}" if pair else edits
        imports = (reference.new_import,) if reference.new_import else ()
        edits = edits if isinstance(edits, tuple) else (edits,)
        return Fix(edits, "exact", "use mindspore.set_device (the same context)", imports=imports)

    def _definition(
        self, name: str, where: Optional[Path]
    ) -> Optional[tuple[Optional[Path], ast.Module, str, Union[ast.FunctionDef, ast.ClassDef]]]:
        """The function or class ``name`` (imported in the file ``where``, None: this one) is in
        another file of the run, read through the project index (which records the files read
        for the cache)."""
        found = self._project.definition(name, where)
        if found is None or found[1].tree is None:
            return None
        path, facts, node = found
        return path, facts.tree, facts.text, node

    @cached_property
    def _project(self) -> ProjectIndex:
        return self.ctx.project.with_local(self.ctx.text, self.ctx.path, self.tree)

    def _device_pair(self, statement: ast.AST) -> Optional[tuple[ast.stmt, ast.stmt]]:
        """(the call that sets the target, the statement right after it that sets the id: the
        call, or an `if` around it) when ``statement`` is either of them."""
        parents = self._device_parents
        if device_id_only(statement) is not None:
            owner = parents.get(statement)
            then = owner if isinstance(owner, ast.If) and owner.body[0] is statement else statement
            before = _previous_statement(parents, then)
            call = before.value if isinstance(before, ast.Expr) else None
            sets_target = isinstance(call, ast.Call) and "device_target" in {k.arg for k in call.keywords}
            return (before, then) if sets_target else None  # type: ignore[return-value]
        after = _next_statement(parents, statement)
        if after is None:
            return None
        inner = after.body[0] if isinstance(after, ast.If) else after
        return (statement, after) if device_id_only(inner) is not None else None  # type: ignore[return-value]

    def _device_layout(self) -> tuple[int, Optional[ast.Call], bool]:
        """How the file sets the device, the same for each of its calls: (how many calls set it,
        the first inside a loop, whether they lie on exclusive paths), computed once."""
        if self._device_facts is None:
            calls = self._device_settings()
            looped = next((call for call in calls if in_loop(self._device_parents, call)), None)
            exclusive = len(calls) > 1 and looped is None and exclusive_paths(self._device_parents, calls)
            self._device_facts = (len(calls), looped, exclusive)
        return self._device_facts

    def _device_settings(self) -> list[ast.Call]:
        """The calls in the file that set the device: set_context with a device key, set_device.
        Only the statements on a line that names a device key or set_device (or what an import
        binds it to) are walked; ``_device_parents`` gets their nodes' parents."""
        aliases = [
            name
            for name, binding in self.resolver.imports.items()
            if binding.qualified == "mindspore.set_device"
        ]
        lines = lines_naming(self.ctx.text, {*DEVICE_KEYS, "set_device", *aliases})
        calls = []
        for node, parent in walk_lines(self.tree, lines):
            if parent is not None:
                self._device_parents[node] = parent
            if not isinstance(node, ast.Call) or not (node.keywords or node.args):
                continue
            called = self.resolver.qualified_name(node.func)
            if called == "mindspore.set_device" or (
                called in SET_CONTEXT and any(keyword.arg in DEVICE_KEYS for keyword in node.keywords)
            ):
                calls.append(node)
        return calls

    def _report(
        self, node: ast.AST, entry: Deprecation, shown: str, fix: Optional[Fix] = None, why: str = ""
    ) -> Diagnostic:
        if entry.kind == "parameter":
            subject = f"keyword `{entry.parameter}=` of `{_short(entry.name)}`"
        elif entry.kind == "context-key":
            subject = f"`set_context` key `{entry.parameter}`"
        elif entry.kind == "module":
            subject = f"module `{entry.name}`"
        else:
            named = f"`{entry.name}`"
            subject = f"{shown} ({named})" if shown and shown != named else named
        if entry.since:
            message = f"{subject} is deprecated since MindSpore {entry.since}"
        else:  # the catalogue's MindSpore says so, without saying since when
            version = ".".join(self.catalogue.mindspore.split(".")[:2])
            message = f"MindSpore {version} marks {subject} deprecated"
        message += f" (target {self.ctx.target})"
        replacement = entry.replacement or ""
        if entry.dotted_replacement:
            message += f"; use `{entry.dotted_replacement}` instead"
            if why:
                message += f" (not fixed: {why})"
        elif entry.kind in ("parameter", "context-key") and replacement.isidentifier():
            message += f"; use `{replacement}=` instead"
        elif replacement:
            message += f"; MindSpore says to use: {re.sub(r'^(?:the|a|an) ', '', replacement)}"
        else:
            message += "; MindSpore names no replacement"
        for retired in changes_reaching(self.ctx.target, kind="sunset"):
            if entry.kind in ("api", "module") and set(entry.names) & set(retired.names):
                message += f"; and {retired.summary} ({retired.cite()})"
        return self.rule.diagnostic(node, message, fix, entry.replacement)

    # --- fixes: drop-in renames only ---------------------------------------------------------

    def _edit(self, start_line: int, start_byte: int, end_line: int, end_byte: int, text: str) -> Edit:
        return Edit(
            (start_line, column(self.lines, start_line, start_byte)),
            (end_line, column(self.lines, end_line, end_byte)),
            text,
        )

    def _segment(self, node: ast.AST) -> str:
        return source_of(self.lines, node)

    def _fix(self, edits: list[Edit], entry: Deprecation) -> Fix:
        return Fix(tuple(edits), "exact", f"use {entry.dotted_replacement} (a drop-in rename)")

    def _use_fix(self, node: ast.Attribute, entry: Deprecation, scopes: list[Scope]) -> Union[Fix, str, None]:
        new = entry.dotted_replacement
        if not entry.rename or new is None:
            return None
        module, _, name = new.rpartition(".")
        parent = self.resolver.qualified_name(node.value, scopes)
        unused: tuple[str, ...] = ()
        imports: tuple[str, ...] = ()
        if parent == module:
            spelled = f"{self._segment(node.value)}.{name}"
        else:
            reference = module_reference(self.resolver, self.names, module, scopes)
            if reference is None:
                return "no free name for mindspore"
            spelled = f"{reference.expression}.{name}"
            unused = released_name(node.value)  # `P.Pack` -> `ops.Stack`: `P` may be unused now
            # A file that imports only `mindspore.ops.operations as P` gets `import mindspore`
            # for `mindspore.ops.Add`, as the set_device split gets it.
            imports = (reference.new_import,) if reference.new_import else ()
        end = node.end_lineno or node.lineno
        edit = self._edit(node.lineno, node.col_offset, end, node.end_col_offset or 0, spelled)
        return replace(self._fix([edit], entry), unused=unused, imports=imports)

    def _method_fix(self, node: ast.Attribute, entry: Deprecation) -> Optional[Fix]:
        new = entry.dotted_replacement
        if not entry.rename or new is None or new.rpartition(".")[0] not in TENSOR_CLASSES:
            return None
        end = node.end_lineno or node.lineno
        start = (node.end_col_offset or 0) - len(node.attr.encode("utf-8"))
        return self._fix(
            [self._edit(end, start, end, node.end_col_offset or 0, new.rpartition(".")[2])], entry
        )

    def _import_rename_fix(self, node: ast.ImportFrom, alias: ast.alias, entry: Deprecation) -> Optional[Fix]:
        """`from M import old [as x]` -> `from M import new as old` (or `as x`), when the
        replacement lives in the same module. The local name stays bound, so the file's uses,
        `__all__` and other modules importing the name from this one all keep working."""
        new = entry.dotted_replacement
        if not entry.rename or new is None or entry.kind != "api":
            return None
        module, _, name = new.rpartition(".")
        if module != node.module:
            return None
        start = alias.col_offset
        end = start + len(alias.name.encode("utf-8"))
        spelled = name if alias.asname is not None else f"{name} as {alias.name}"
        return self._fix([self._edit(alias.lineno, start, alias.lineno, end, spelled)], entry)

    def _module_fix(self, alias: ast.alias, entry: Deprecation) -> Union[Fix, str, None]:
        new = entry.dotted_replacement
        if not entry.rename or new is None or alias.asname is None or alias.name != entry.name:
            return None
        used = {
            node.attr
            for node in walk(self.tree)
            if isinstance(node, ast.Attribute)
            and isinstance(node.value, ast.Name)
            and node.value.id == alias.asname
        }
        lost = self._not_in_target(alias.name, new, used)
        if lost is not None:
            return lost
        start = alias.col_offset
        return self._fix([self._edit(alias.lineno, start, alias.lineno, start + len(alias.name), new)], entry)

    def _from_module_fix(self, node: ast.ImportFrom, entry: Deprecation) -> Union[Fix, str, None]:
        new = entry.dotted_replacement
        if not entry.rename or new is None or node.module not in entry.names:
            return None
        lost = self._not_in_target(node.module, new, {alias.name for alias in node.names})
        if lost is not None:
            return lost
        segment = self._segment(node)
        offset = segment.find(node.module or "", len("from"))
        if offset < 0 or "\n" in segment[:offset]:
            return None
        start = node.col_offset + len(segment[:offset].encode("utf-8"))
        edit = self._edit(
            node.lineno, start, node.lineno, start + len((node.module or "").encode("utf-8")), new
        )
        return self._fix([edit], entry)

    def _not_in_target(self, old: str, new: str, names: Iterable[str]) -> Optional[str]:
        """Why a name the file takes from module ``old`` keeps it from moving to ``new``: one that
        the target has in neither (`ms_function`, which MS211 reports where it is imported: after
        the move it would fail to import all the same, and go unreported)."""
        facts = api_facts()
        target = self.ctx.target
        for name in sorted(names):
            if facts is not None and False in (
                facts.has_name(f"{old}.{name}", target),
                facts.has_name(f"{new}.{name}", target),
            ):
                return f"`{name}` is not in MindSpore {target}"
        return None

    # --- facts about the file ----------------------------------------------------------------

    @cached_property
    def names(self) -> NamesOf:
        return NamesOf(self.tree, self.ctx.text)

    def _is_tensor(self, node: ast.AST, scopes: list[Scope]) -> bool:
        """``node`` provably holds a Tensor: `Tensor(...)` itself, or a name bound only to one."""
        if isinstance(node, ast.Call):
            return self.resolver.qualified_name(node.func, scopes) in TENSOR_CLASSES
        if not isinstance(node, ast.Name) or not self._could_be_tensor(node.id):
            return False
        for index, scope in enumerate(scopes):
            if node.id in self.resolver.locals_of(scope):
                if not isinstance(scope, FUNCTION_TYPES):
                    return False
                return node.id in self._tensor_names(scope, scopes[index:])
        return node.id in self._tensor_names(self.tree, [])

    def _could_be_tensor(self, name: str) -> bool:
        """The text binds ``name`` to a `...Tensor(` call or annotates it `: ...Tensor` somewhere:
        without either, no scope can prove it a Tensor, and none needs to be looked at."""
        known = self._tensor_candidates.get(name)
        if known is None:
            # `(?<![\w.])name\s*(...)`, searched from the name (see found_after).
            pattern = re.compile(rf"{re.escape(name)}\s*(?::[^=\n]*\bTensor\b|=\s*[\w.]*\bTensor\s*\()")
            text = self.ctx.text
            known = self._tensor_candidates[name] = "Tensor" in text and found_after(pattern, text, ".")
        return known

    def _tensor_names(self, scope: Union[ast.Module, Scope], scopes: list[Scope]) -> set[str]:
        cached = self._tensors.get(id(scope))
        if cached is not None:
            return cached
        stores: Counter[str] = Counter()
        built: set[str] = set()
        annotated: set[str] = set()
        if isinstance(scope, FUNCTION_TYPES):
            arguments = scope.args
            for arg in (*arguments.posonlyargs, *arguments.args, *arguments.kwonlyargs):
                stores[arg.arg] += 1
                annotation = arg.annotation
                if (
                    annotation is not None
                    and self.resolver.qualified_name(annotation, scopes[1:]) in TENSOR_CLASSES
                ):
                    annotated.add(arg.arg)
            for star in (arguments.vararg, arguments.kwarg):
                if star is not None:
                    stores[star.arg] += 1
        body = scope.body if isinstance(scope, (ast.Module, *FUNCTION_TYPES)) else [scope.body]
        stack: list[ast.AST] = list(body)
        while stack:
            node = stack.pop()
            if isinstance(node, (*FUNCTION_TYPES, ast.ClassDef)):
                stores[node.name] += 1
                continue
            if isinstance(node, ast.Lambda):
                continue
            if isinstance(node, (ast.Global, ast.Nonlocal)):
                stores.update({name: 2 for name in node.names})
            elif isinstance(node, ast.Name) and not isinstance(node.ctx, ast.Load):
                stores[node.id] += 1
            elif isinstance(node, ast.alias):
                stores[node.asname or node.name.split(".")[0]] += 1
            elif (
                isinstance(node, ast.Assign)
                and len(node.targets) == 1
                and isinstance(node.targets[0], ast.Name)
                and self._is_tensor_call(node.value, scopes)
            ):
                built.add(node.targets[0].id)
            stack.extend(child_nodes(node))
        names = {name for name in built | annotated if stores[name] == 1}
        self._tensors[id(scope)] = names
        return names

    def _is_tensor_call(self, value: ast.AST, scopes: list[Scope]) -> bool:
        return (
            isinstance(value, ast.Call) and self.resolver.qualified_name(value.func, scopes) in TENSOR_CLASSES
        )


# Deprecated keywords another rule reports with what their meaning becomes, and fixes:
# nn.Dropout's keep_prob (MS220).
_OWN_RULES = {"keep_prob": frozenset({"mindspore.nn.Dropout", "mindspore.nn.layer.basic.Dropout"})}


def _short(name: str) -> str:
    return name[len("mindspore.") :] if name.startswith("mindspore.") else name


# A position (line, column) as one int that orders the same, cheaper to compare and bisect.
_LINE_SHIFT = 32
# Classes whose objects hold data a kernel computes with (`Tensor`, `Parameter`, `COOTensor`).
_DECORATED = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)
# Nodes that can neither be reported nor hold one that is: a bare name (reported at its import)
# and a constant (contexts and operators `child_nodes` leaves out already).
_INERT = (ast.Name, ast.Constant)


def _children(node: ast.AST) -> list[ast.AST]:
    """``ast.iter_child_nodes(node)`` without the inert ones, in order."""
    return [child for child in child_nodes(node) if not isinstance(child, _INERT)]


def _matched_positions(text: str, catalogue: Catalogue) -> list[int]:
    """Where a catalogue word starts, as ast counts: line from 1 and UTF-8 byte column, packed as
    ``line << _LINE_SHIFT | column``, in order."""
    if "\r" in text and "\r" in text.replace("\r\n", ""):
        return _positions_by_lines(text, catalogue)  # a bare CR ends a line too, for Python
    if text.isascii():
        return _ascii_positions(text.encode("ascii"), catalogue)
    positions: list[int] = []
    line, line_start, position = 1, 0, 0
    for match in catalogue.pattern.finditer(text):
        start = match.start()
        newlines = text.count("\n", position, start)
        if newlines:
            line += newlines
            line_start = text.rfind("\n", position, start) + 1
        position = start
        before = text[line_start:start]
        column = start - line_start if before.isascii() else len(before.encode("utf-8"))
        positions.append(line << _LINE_SHIFT | column)
    return positions


def _positions_by_lines(text: str, catalogue: Catalogue) -> list[int]:
    """The same, for a text with lines that end in a bare CR (old Mac files): slower, and rare."""
    starts = line_starts(text)
    positions: list[int] = []
    for match in catalogue.pattern.finditer(text):
        line = line_of(starts, match.start())
        column = len(text[starts[line - 1] : match.start()].encode("utf-8"))
        positions.append(line << _LINE_SHIFT | column)
    return positions


def _ascii_positions(data: bytes, catalogue: Catalogue) -> list[int]:
    """The same for a text that is all ASCII, scanned as bytes: there `\\b` means the same, a
    character is a byte, and the pattern runs faster. A process's first texts are scanned by
    their words instead: compiling the pattern costs more than a few texts' scans save."""
    positions: list[int] = []
    line, line_start, position = 1, 0, 0
    if _texts_asked <= SCREEN_AFTER_TEXTS:  # a short run: its words, not the compiled pattern
        words = catalogue.byte_words
        matches: Iterable[re.Match[bytes]] = (
            match for match in _BYTE_WORD.finditer(data) if match.group() in words
        )
    else:
        matches = catalogue.byte_pattern.finditer(data)
    for match in matches:
        start = match.start()
        newlines = data.count(b"\n", position, start)
        if newlines:
            line += newlines
            line_start = data.rfind(b"\n", position, start) + 1
        position = start
        positions.append(line << _LINE_SHIFT | (start - line_start))
    return positions


# --- the prefilter ------------------------------------------------------------------------------
#
# A catalogue word in the text is not enough for a finding: most are `self.cast`, numpy's
# `.uniform`, a `mode` in prose. What the rule flags is spelled in one of three ways, each of which
# leaves a trace a regular expression can look for:
#   - an attribute (`ops.x`, `t.x()`, `import a.x`, `from a.x import y`): the word comes after a
#     dot, with only blanks, comments and line continuations between;
#   - a name in `from a import x`: the word lies inside an import statement;
#   - a keyword (`f(x=1)`): the word is followed by `=`, and the callable it belongs to is named
#     in the text, by its last part (every part of a qualified name is written somewhere: in the
#     import that binds its first parts, or in the attribute chain after it).
# A name under a class called Tensor needs the word `Tensor` too: the class is imported or called.
# The patterns match more than that grammar (in strings and comments too): that only lets more
# files through. Python NFKC-normalises identifiers (`ｃａｓｔ` is `cast`), so a text that is not
# ASCII is looked at normalised, as the parser sees its names.

# A comment runs to the end of its line: a pattern that may end it earlier backtracks
# exponentially over a line of `#`s.
_COMMENT = r"#[^\r\n]*(?![^\r\n])"
# What may stand between a dot and the attribute's name.
_GAP = rf"(?:[ \t\f\r\n\\]|{_COMMENT})*"
# The same gap between a keyword's name and its `=`, read backwards (see _Screen): a comment then
# starts at a line break and ends at a `#`.
_GAP_BACKWARDS = r"(?:[ \t\f\r\n\\]|(?<![^\r\n])[^\r\n]*#)*"
# An import statement after `import`, up to a name in it: names, dots, commas, `as` and line
# continuations, then maybe a parenthesised list with comments.
_IMPORT_TO_A_NAME = rf"import\b(?:[ \t\f\w,.]|\\(?:\r\n?|\n))*?(?:\((?:[^)#]|{_COMMENT})*?)?"


class _Screen:
    """The patterns of the prefilter for one catalogue. Each match holds a catalogue word as a
    whole identifier, so whatever they let through the catalogue's word pattern would too.

    Each pattern starts with a literal (`.`, `import`, `=`), which the regular expression engine
    finds at the speed of a plain find; one starting with a word boundary is tried at every
    position. Keywords are therefore looked for in the reversed text, from their `=`. The
    cheapest and likeliest tests come first: a file usually has its finding's word after a dot."""

    def __init__(self, catalogue: Catalogue) -> None:
        self.catalogue = catalogue
        self.tensor_words = catalogue.tensor_words
        self.keyword_owners = catalogue.keyword_owners
        self._word = rf"\b({word_alternation(catalogue.name_words)})\b" if catalogue.name_words else _NEVER

    # Each pattern is compiled on first need (tens of milliseconds for a catalogue's words): a
    # pre-commit run over one file that has a finding mostly needs the first one only.
    @cached_property
    def attribute(self) -> re.Pattern[str]:
        return re.compile(rf"\.[ \t\f]*{self._word}")

    @cached_property
    def imported(self) -> re.Pattern[str]:
        return re.compile(_IMPORT_TO_A_NAME + self._word)

    @cached_property
    def broken_attribute(self) -> re.Pattern[str]:
        """A dot at the end of a line, the name on a later one: rarer, and slower to look for."""
        return re.compile(rf"\.[ \t\f]*(?:[\r\n\\]|{_COMMENT}){_GAP}{self._word}")

    @cached_property
    def keyword(self) -> re.Pattern[str]:
        backwards = word_alternation(word[::-1] for word in self.keyword_owners)
        return re.compile(rf"=(?<!==){_GAP_BACKWARDS}({backwards})\b" if backwards else _NEVER)

    @cached_property
    def owners(self) -> dict[str, frozenset[str]]:
        """For each name word that is not a Tensor method: the parts before it in the deprecated
        names it ends (`ops` and `functional` for `cast`). The rule resolves an attribute chain
        only through the module's imports, so the word's owner is one of them or a name an
        import binds with `as`; a Tensor method's owner is any value that may be a Tensor."""
        owners: dict[str, set[str]] = {}
        for name in (*self.catalogue.apis, *self.catalogue.modules):
            parent, _, word = name.rpartition(".")
            if word not in self.catalogue.tensor_methods:
                owners.setdefault(word, set()).add(parent.rpartition(".")[2])
        return {word: frozenset(parents) for word, parents in owners.items()}

    def admits(self, text: str) -> bool:
        tensor: list[bool] = []  # whether the text holds the word `Tensor`, once asked
        return (
            self._attribute(text, tensor)
            or self._named(self.imported, text, tensor)
            or self._keyword(text, tensor)
            or self._named(self.broken_attribute, text, tensor)
        )

    def _named(self, pattern: re.Pattern[str], text: str, tensor: list[bool]) -> bool:
        for match in pattern.finditer(text):
            if match.group(1) not in self.tensor_words or _has_tensor(text, tensor):
                return True
        return False

    def _attribute(self, text: str, tensor: list[bool]) -> bool:
        """``_named`` for `.word`, where the name before the dot on its line may be the word's
        owner: `np.random.shuffle` and `self.cast` name nothing deprecated (a third of the files
        of mindspore-ai/models that this screen let through found nothing)."""
        aliases: Optional[set[str]] = None
        for match in self.attribute.finditer(text):
            word = match.group(1)
            if word in self.tensor_words and not _has_tensor(text, tensor):
                continue
            owners = self.owners.get(word)
            owner = _name_before(text, match.start())
            if owners is None or owner is None or owner in owners:
                return True
            if aliases is None:
                aliases = set(_ALIAS.findall(text))
            if owner in aliases:
                return True
        return False

    def _keyword(self, text: str, tensor: list[bool]) -> bool:
        looked: set[str] = set()
        for match in self.keyword.finditer(text[::-1]):
            word = match.group(1)[::-1]
            if word in looked:
                continue
            looked.add(word)  # its callables are looked for once
            outside, under_tensor = self.keyword_owners[word]
            if under_tensor and _has_tensor(text, tensor):
                outside = outside | under_tensor
            if any(_mentions(text, owner) for owner in outside):
                return True
        return False


_NEVER = r"(?!x)x"
# A name an import binds with `as` (elsewhere too: more names only let more files through).
_ALIAS = re.compile(r"as(?:\s|\\)+(\w+)")


def _name_before(text: str, dot: int) -> Optional[str]:
    """The name right before the dot at ``dot``, blanks between, on the same line; None if
    something else is (a bracket, a line break: a name on an earlier line may end in a comment)."""
    end = dot
    while end > 0 and text[end - 1] in " \t\f":
        end -= 1
    start = end
    while start > 0 and _is_word_char(text[start - 1]):
        start -= 1
    return text[start:end] if start < end else None


def _has_tensor(text: str, known: list[bool]) -> bool:
    if not known:
        known.append(_mentions(text, "Tensor"))
    return known[0]


def _mentions(text: str, word: str) -> bool:
    """``word`` is in ``text`` as a whole identifier (`\\bword\\b`, found at the speed of a
    plain find: a pattern starting with a word boundary is tried at every position)."""
    start = text.find(word)
    while start >= 0:
        end = start + len(word)
        if (start == 0 or not _is_word_char(text[start - 1])) and (
            end == len(text) or not _is_word_char(text[end])
        ):
            return True
        start = text.find(word, start + 1)
    return False


def _is_word_char(char: str) -> bool:
    return char.isalnum() or char == "_"  # what `\w` matches in a str pattern


_SCREENS: dict[int, tuple[Catalogue, _Screen]] = {}
# The screen's patterns take tens of milliseconds to compile, repaid only over many texts: the
# first ones a process asks about (all of them, in a pre-commit run over a few files) are let
# through on the catalogue's word pattern alone, which the rule compiles anyway to find its
# positions. Either way the rule's own check decides what is reported.
SCREEN_AFTER_TEXTS = 16
_WORD = re.compile(r"\w+")  # every catalogue word is made of word characters (an identifier's)
_BYTE_WORD = re.compile(rb"\w+")
_texts_asked = 0


def may_be_flagged(text: str, catalogue: Catalogue) -> bool:
    """Whether MS210 can find anything in ``text``: False only where it provably finds nothing."""
    global _texts_asked
    _texts_asked += 1
    if _texts_asked <= SCREEN_AFTER_TEXTS:
        # A catalogue word as a whole identifier: one of the text's words. Compiling the word
        # pattern instead (tens of milliseconds) was most of a one-file run's rule time.
        return not catalogue.words.isdisjoint(_WORD.findall(text))
    known = _SCREENS.get(id(catalogue))
    if known is None or known[0] is not catalogue:  # a catalogue since collected had that id
        known = _SCREENS[id(catalogue)] = (catalogue, _Screen(catalogue))
    if text.isascii():
        return known[1].admits(text)
    # The names the screen sees are normalised; those the rule looks for (its word pattern marks
    # where) are as written: both must be there.
    return catalogue.pattern.search(text) is not None and known[1].admits(unicodedata.normalize("NFKC", text))


def _sibling_block(parents: dict[ast.AST, ast.AST], statement: ast.AST) -> tuple[list[ast.stmt], int]:
    """The statement list that holds ``statement``, and its index there ([], -1: none)."""
    owner = parents.get(statement)
    for field in ("body", "orelse", "finalbody"):
        block = getattr(owner, field, None)
        if isinstance(block, list) and any(item is statement for item in block):
            return block, next(index for index, item in enumerate(block) if item is statement)
    return [], -1


def _previous_statement(parents: dict[ast.AST, ast.AST], statement: ast.AST) -> Optional[ast.stmt]:
    block, index = _sibling_block(parents, statement)
    return block[index - 1] if index > 0 else None


def _next_statement(parents: dict[ast.AST, ast.AST], statement: ast.AST) -> Optional[ast.stmt]:
    block, index = _sibling_block(parents, statement)
    return block[index + 1] if 0 <= index < len(block) - 1 else None
