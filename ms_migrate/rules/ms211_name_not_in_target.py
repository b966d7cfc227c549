"""MS211: a MindSpore module or name that the target release does not have.

The first error a migrated script meets is an `AttributeError` or `ModuleNotFoundError` on a
name its new MindSpore no longer has (`mindspore.dataset.vision.c_transforms`, gone in 2.8;
`mindspore.ms_function`, gone by 2.7), or, going down, on one the old release does not have yet.
A deprecation catalogue cannot see these: a removed name is in no catalogue of the release that
removed it. What each release has is read from the releases themselves
(rules/releases/api.json, `python -m ms_migrate.catalogue releases`).
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from functools import cache, cached_property
from typing import Optional, Union

from ms_migrate.analysis.names import dotted_name
from ms_migrate.analysis.text_scan import at_line_starts, at_word_starts
from ms_migrate.context import FileContext
from ms_migrate.diagnostics import Diagnostic, Edit, Fix, Severity, source_lines
from ms_migrate.facts.public_modules import PUBLIC_MODULES, SKIPPED
from ms_migrate.facts.releases import ApiFacts, Move, api_facts, binds_alike
from ms_migrate.facts.versions import Version
from ms_migrate.rewrite.text_edits import column
from ms_migrate.rules.base import Example, Examples, Rule

# Names another rule rewrites for the target, with its own reasons: MS201 and MS301/MS302 (the
# functional autodiff API before 2.0 / 1.8), MS303 (jit before 2.0).
HANDLED_ELSEWHERE = frozenset(
    {
        "mindspore.value_and_grad",
        "mindspore.grad",
        "mindspore.jit",
        "mindspore.ops.value_and_grad",
        "mindspore.ops.grad",
    }
)

FIXED_IMPORT = """\
from mindspore import jit as ms_function


@ms_function
def step(x):
    return x
"""

FIXED_MODULE = """\
import mindspore.dataset.vision as C

resize = C.Resize((32, 32))
"""


FIXED_DOWN = """\
import mindspore.dataset.vision as vision

resize = vision.c_transforms.Resize((32, 32))
"""


FIXED_MEMBERS = """\
from mindspore import _checkparam as Validator

rate = Validator.check_positive_float(0.1)
"""


class NameNotInTarget(Rule):
    """A use of a MindSpore module or name that the target release does not have: it fails at
    import (`ModuleNotFoundError`, `ImportError`) or when reached (`AttributeError`).

    What each release has is computed from the releases ms-migrate can install (1.7-1.10 and
    2.7-2.10): their importable public modules and names, diffed. A target between two of them
    (2.0-2.6) lacks a name only when both lack it. The message says the last release checked that
    has the name (or, for a downgrade, the first), and its replacement where MindSpore moved it
    (rules/releases/moves.json, each move with its source in the MindSpore docs).

    Fix safety: exact, and written only where (1) MindSpore moved the name, (2) the new spelling
    exists on the target, (3) the pair ran with the same numbers on both releases
    (rules/releases/proofs.json, `python -m ms_migrate.catalogue prove`), and (4) every use in the
    file passes its arguments to the same parameters on both sides, with the same defaults for
    those it leaves out (`c_transforms.Decode(rgb=True)` has no counterpart in
    `vision.Decode(to_pil=False)`, so it is left to a human). A class whose members a release made
    names of a module (1.x's private `_checkparam.Validator` and `Rel`, 2.0's functions and
    constants of `_checkparam`) gives way to the module under the same local name, where each
    member used is a proven pair. py_transforms is reported with the replacement named, never
    fixed.

    Going down, a name the target does not have yet is written in the old spelling of its move
    (1.7 has the unified dataset ops only in c_transforms: `vision.Resize` becomes
    `vision.c_transforms.Resize`, `from mindspore.dataset.vision import Resize` imports from
    `mindspore.dataset.vision.c_transforms`), where the pair's proof ran the old spelling on the
    target's own release and each use binds alike. Compose, RandomApply and RandomChoice stay:
    2.x's take Python functions, 1.7's c_transforms ones only C ops. A vision op whose input may
    be a PIL image stays too (one called at once on an input, any in a file that names PIL):
    2.x's take them, 1.7's only numpy arrays, and the proofs ran on a numpy image.

    A name that no release checked has is reported too, where the module it is asked of is one
    whose names the facts list whole (a package, or a namespace users import from) and that
    holds nothing of that name in any release, not even another package's object: code of 1.0
    and 1.1 (`P.ControlDepend`, `F.control_depend`, gone in 1.2 for `F.depend`), a misspelt name
    (`nn.BCEloss`), a PyTorch name (`nn.Module`). Never fixed: no release says what it became.
    See https://mindspore.cn/docs/en/r1.9/api_python/mindspore.dataset.transforms.html and
    https://www.mindspore.cn/docs/en/r2.0/api_python/mindspore/mindspore.jit.html.
    """

    code = "MS211"
    title = "MindSpore name the target release does not have"
    kind = "lint"
    release_fix = True
    severity = Severity.ERROR
    examples = Examples(
        valid=(
            Example("from mindspore import jit\n"),
            Example("from mindspore import ms_function\n", "1.10"),
            Example("import mindspore.dataset.vision.c_transforms as C\n", "2.7"),
            Example("from mindspore import value_and_grad\n", "1.9"),  # MS201's
        ),
        invalid=(
            Example(
                "from mindspore import ms_function\n\n\n@ms_function\ndef step(x):\n    return x\n",
                fixed=FIXED_IMPORT,
            ),
            Example(
                "import mindspore.dataset.vision.c_transforms as C\n\nresize = C.Resize((32, 32))\n",
                fixed=FIXED_MODULE,
            ),
            Example(
                "from mindspore._checkparam import Validator\n\nrate = Validator.check_positive_float(0.1)\n",
                fixed=FIXED_MEMBERS,
            ),
            Example(
                "import mindspore.dataset.vision as vision\n\nresize = vision.Resize((32, 32))\n",
                "1.7",
                fixed=FIXED_DOWN,
            ),
            Example(
                "from mindspore.profiler.profiling import Profiler\n\nprofiler = Profiler(is_detail=True)\n"
            ),
            Example("import mindspore as ms\nfrom mindspore import mint\n", "1.10"),
            Example("from mindspore.ops import operations as P\n\norder = P.ControlDepend(depend_mode=1)\n"),
        ),
    )

    def applies_to(self, text: str, target: Version) -> bool:
        if target not in self.targets or "mindspore" not in text:
            return False
        missing = missing_at(target)
        return missing is not None and missing.may_hold(text)

    def check(self, ctx: FileContext) -> Iterable[Diagnostic]:
        missing = missing_at(ctx.target)
        if missing is not None:
            yield from _Finder(self, ctx, missing).findings()


@dataclass(frozen=True)
class Missing:
    """What one target lacks of what some release checked has, and how a text can name it.

    Any spelling of `mindspore.nn.metrics.metric.Metric` writes each part of it as a word
    (`from mindspore.nn.metrics import metric` then `metric.Metric`, or `import
    mindspore.nn.metrics.metric as m`), and its last part after a dot or in an import: a file is
    parsed only when it holds something missing so."""

    facts: ApiFacts
    target: Version
    modules: frozenset[str]
    names: frozenset[str]
    spellings: dict[str, tuple[frozenset[str], ...]]  # last part -> the other parts of each one
    # last part -> the part before it in each missing dotted name (`functional` for
    # `mindspore.ops.functional.Tensor`): what an attribute or a from-import names it after
    parents: dict[str, frozenset[str]] = field(default_factory=dict)
    # the modules the target has whose names the facts list whole (a package, or a namespace
    # users import from): a name one of them is asked for that no release checked has is one no
    # release has (`P.ControlDepend`, gone in 1.2; `nn.BCEloss`)
    whole: frozenset[str] = frozenset()

    def names_unknown(self, text: str) -> frozenset[str]:
        """The last parts of what ``text`` asks a module listed whole for, through MindSpore's
        imports (`P.ControlDepend` with `from mindspore.ops import operations as P`, `from
        mindspore.ops.operations import ControlDepend`, `import mindspore.nn.functional`), that
        no release checked has there; the rule then resolves each use. Kept for the last text."""
        last = _last_unknown.get(self.target)
        if last is not None and (last[0] is text or last[0] == text):
            return last[1]
        found = frozenset(
            dotted.rpartition(".")[2]
            for dotted in _asked_of_mindspore(text, self.facts)
            if not dotted.rpartition(".")[2].startswith("_")
            and dotted.rpartition(".")[0] in self.whole
            and not _held(self.facts, dotted)
        )
        _last_unknown[self.target] = (text, found)
        return found

    @property
    def words(self) -> frozenset[str]:
        return frozenset(self.spellings)

    def may_hold(self, text: str) -> bool:
        # The runner's prefilter and then the engine ask this of each file: the answer is kept
        # for the last text (compared by identity first: it is the same string).
        last = _last_answer.get(self.target)
        if last is not None and (last[0] is text or last[0] == text):
            return last[1]
        answer = self._may_hold(text)
        _last_answer[self.target] = (text, answer)
        return answer

    def _may_hold(self, text: str) -> bool:
        """A missing name's last part follows what it is missing from: `functional.Tensor`,
        `F.Tensor` with F an alias of a module named `functional`, `import ....functional.Tensor`
        or `from ....functional import Tensor`; `ms.Tensor` in a file that also imports
        `functional` names nothing missing. Each form is looked for once per text."""
        if "\r" in text:  # CRLF, or an old Mac file's bare CRs: lines as `^` finds them
            text = text.replace("\r\n", "\n").replace("\r", "\n")
        # Only a word after a dot or in a from-import can be found below: those are the
        # candidates, rather than every identifier of the text (a third of the cost of it all).
        imported = [
            (module, item.split(" as ")[0].strip().strip("()\\").strip())
            for module, listed in (match.groups() for match in at_line_starts(_FROM_IMPORT, text))
            for item in listed.split(",")
        ]
        candidates = set(_AFTER_DOT.findall(text)).union(name for _, name in imported)
        present: dict[str, bool] = {}  # the same few parts (`mindspore`, `ops`) for most words

        def written(part: str) -> bool:
            found = present.get(part)
            if found is None:
                found = present[part] = part in text
            return found

        words = {
            word
            for word in candidates.intersection(self.spellings)
            if any(all(map(written, parts)) for parts in self.spellings[word])
        }
        if not words:
            return bool(self.names_unknown(text))
        if any(name in words and module in self.parents[name] for module, name in imported):
            return True
        aliases: Optional[dict[str, set[str]]] = None
        owners: set[tuple[str, str]] = set()
        for match in _AFTER_DOT.finditer(text):
            start, word = match.start(), match.group(1)
            owner = _OWNER.search(text, max(0, start - 100), start) if word in words else None
            if owner is None or (owner.group(1), word) in owners:
                continue
            owners.add((owner.group(1), word))
            if owner.group(1) in self.parents[word]:
                return True
            if aliases is None:
                aliases = _aliases(text)
            if aliases.get(owner.group(1), set()) & self.parents[word]:
                return True
        return bool(self.names_unknown(text))


def _held(facts: ApiFacts, dotted: str) -> bool:
    """Whether some release checked has ``dotted``: a name, a module, or another package's object
    that a module listed whole holds."""
    return dotted in facts.names or dotted in facts.modules or dotted in facts.foreign


_last_answer: dict[Version, tuple[str, bool]] = {}  # target -> the last text asked, and the answer
_last_unknown: dict[Version, tuple[str, frozenset[str]]] = {}  # the same, of names_unknown

# `import mindspore.nn as nn, mindspore` and `from mindspore.ops import (operations as P, ...)`
_IMPORT_MINDSPORE = re.compile(r"import[ \t]+(mindspore[\w. \t,]*)")
_FROM_MINDSPORE = re.compile(r"from[ \t]+(mindspore[\w.]*)[ \t]+import\b([ \t]*\([^)]*\)|[^\n(]*)")
_AS = re.compile(r"\s+as\s+")


def _asked_of_mindspore(text: str, facts: ApiFacts) -> Iterator[str]:
    """Each dotted name ``text`` asks of a MindSpore module: what it imports, and the first part
    of each chain after a name its imports bind to a module that is not itself a module."""
    bound: dict[str, str] = {}  # local name -> the MindSpore module it is
    for match in at_line_starts(_IMPORT_MINDSPORE, text):
        for item in match.group(1).split(","):
            parts = _AS.split(item.strip(), maxsplit=1)
            name, alias = parts[0].strip(), parts[1].strip() if len(parts) > 1 else ""
            if name.startswith("mindspore"):
                bound[alias or "mindspore"] = name if alias else "mindspore"
                yield name
    for match in at_line_starts(_FROM_MINDSPORE, text):
        module = match.group(1)
        yield module
        for item in match.group(2).strip().strip("()").split(","):
            parts = _AS.split(item.strip(), maxsplit=1)
            name = parts[0].strip().strip("\\").strip()
            if not name or name == "*" or not name.isidentifier():
                continue
            dotted = f"{module}.{name}"
            yield dotted
            if dotted in facts.modules:
                bound[(parts[1] if len(parts) > 1 else name).strip()] = dotted
    if not bound:
        return
    for match in at_word_starts(_chains_from(tuple(sorted(bound))), text):
        if text[match.start() - 1 : match.start()] == ".":
            continue  # `self.nn.x`: an attribute, not the import
        module = bound[match.group(1)]
        for part in _WORD.findall(match.group(2)):
            dotted = f"{module}.{part}"
            if dotted not in facts.modules:
                yield dotted
                break
            module = dotted


_WORD = re.compile(r"\w+")


@cache
def _chains_from(names: tuple[str, ...]) -> re.Pattern[str]:
    """`name.part.part`, for each of ``names``: one pattern for a file's imports."""
    return re.compile(r"(" + "|".join(map(re.escape, names)) + r")((?:[ \t]*\.[ \t]*\w+)+)")


# A word after a dot: `findall` of every one, then one set intersection with the missing names'
# last parts. A trie of those parts as one pattern scanned about as fast, but compiling it cost
# each process 0.1 to 0.2 s before its first file (a one-file check paid it whole).
_AFTER_DOT = re.compile(r"\.\s*(\w+)")


# The patterns start with a word, so a scan jumps from one to the next; where its line starts
# is checked after (ms_migrate.analysis.text_scan says why).
_IMPORT_WORD = re.compile(r"import[ \t]+([^\n]+)")
_IMPORT_HEAD = re.compile(r"[ \t]*(?:from[ \t]+[\w.]+[ \t]+)?")
_ALIAS = re.compile(r"([\w.]+)\s+as\s+(\w+)")


def _aliases(text: str) -> dict[str, set[str]]:
    """Each name an import binds with `as` -> the last parts of what it binds (`F` ->
    {`functional`} for `from mindspore.ops import functional as F`)."""
    found: dict[str, set[str]] = {}
    for match in _IMPORT_WORD.finditer(text):  # the rest of its line is no import's start
        if _IMPORT_HEAD.fullmatch(text, text.rfind("\n", 0, match.start()) + 1, match.start()):
            for bound, alias in _ALIAS.findall(match.group(1)):
                found.setdefault(alias, set()).add(bound.rpartition(".")[2])
    return found


# `from a.b.module import x, y as z` (on one line, or in parentheses): module's last part, the list
_FROM_IMPORT = re.compile(r"from[ \t]+[\w.]*?(\w+)[ \t]+import\b([ \t]*\([^)]*\)|[^\n(]*)")


_OWNER = re.compile(r"(\w+)\s*$")


@cache
def missing_at(target: Version) -> Optional[Missing]:
    facts = api_facts()
    if facts is None:
        return None
    # facts.has_module / has_name, asked of every name at once: each process starts with this.
    around = facts.around(target)
    present = {module for module, releases in facts.modules.items() if not releases.isdisjoint(around)}
    modules = frozenset(facts.modules.keys() - present)
    # Tens of thousands of names share a few dozen spans of releases: each span is asked once.
    gone = {releases for releases in set(facts.names.values()) if releases.isdisjoint(around)}
    names = frozenset(
        name
        for name, releases in facts.names.items()
        if releases in gone and name not in HANDLED_ELSEWHERE and name.rpartition(".")[0] in present
    )
    spellings: dict[str, set[frozenset[str]]] = {}
    parents: dict[str, set[str]] = {}
    for dotted in (*modules, *names):
        *parts, word = dotted.split(".")[1:]
        spellings.setdefault(word, set()).add(frozenset(parts))
        parents.setdefault(word, set()).add(dotted.split(".")[-2])
    found = {word: tuple(found) for word, found in spellings.items()}
    packages = {module.rpartition(".")[0] for module in facts.modules}
    whole = frozenset(
        module
        for module in present
        if (module in PUBLIC_MODULES or module in packages) and not module.startswith(SKIPPED)
    )
    return Missing(
        facts,
        target,
        modules,
        names,
        found,
        {word: frozenset(p) for word, p in parents.items()},
        whole,
    )


Fixed = Union[Fix, str]  # a fix, or why there is none


@dataclass(frozen=True)
class _Verdict:
    """What a dotted name lacks on the target: a module, or a name in a module it has."""

    kind: str  # "module" or "name"
    name: str


class _Finder:
    def __init__(self, rule: NameNotInTarget, ctx: FileContext, missing: Missing) -> None:
        self.rule, self.ctx, self.missing, self.facts = rule, ctx, missing, missing.facts
        self.lines = source_lines(ctx.text)

    def findings(self) -> Iterator[Diagnostic]:
        words = self.missing.words
        unknown = self.missing.names_unknown(self.ctx.text)
        for node in self.ctx.nodes:
            if isinstance(node, (ast.Import, ast.ImportFrom)):
                yield from self._import(node)
            elif isinstance(node, ast.Attribute) and isinstance(node.ctx, ast.Load):
                found = self._chain(node) if node.attr in words else None
                if found is None and node.attr in unknown:
                    found = self._unknown_chain(node)
                if found is not None:
                    yield found

    # --- what a name lacks ---------------------------------------------------------------

    def verdict(self, dotted: str) -> Optional[_Verdict]:
        """The first of ``dotted`` and its parents (longest first) that the facts know: lacking
        on the target, or None when it is there (or nothing is known of it)."""
        parts = dotted.split(".")
        for end in range(len(parts), 1, -1):
            prefix = ".".join(parts[:end])
            if prefix in self.facts.modules:
                return _Verdict("module", prefix) if prefix in self.missing.modules else None
            if prefix in self.missing.names:
                return _Verdict("name", prefix)
            if prefix in self.facts.names and self.facts.has_name(prefix, self.missing.target):
                return None  # there; a name lacking with its module is reported as the module
        return None

    # --- imports and chains --------------------------------------------------------------

    def _import(self, node: Union[ast.Import, ast.ImportFrom]) -> Iterator[Diagnostic]:
        if isinstance(node, ast.Import):
            for alias in node.names:
                verdict = self.verdict(alias.name)
                if verdict is not None:
                    yield self._report(
                        alias, verdict, f"`import {alias.name}`", self._import_fix(alias, verdict)
                    )
                elif self._unknown(alias.name):
                    yield self._report_unknown(alias, alias.name, f"`import {alias.name}`")
            return
        if node.level or not node.module:
            return
        if self._unknown(node.module):
            yield self._report_unknown(node, node.module, f"`from {node.module} import`")
            return
        verdict = self.verdict(node.module)
        if verdict is not None and not self._names_moved(node):
            fixed = self._from_module_fix(node, verdict)
            yield self._report(node, verdict, f"`from {node.module} import`", fixed)
            return
        for alias in node.names:
            dotted = f"{node.module}.{alias.name}"
            # A name whose module is gone is reported as a name where it moved on its own.
            found = _Verdict("name", dotted) if verdict is not None else self.verdict(dotted)
            if found is not None:
                yield self._report(alias, found, "", self._from_name_fix(node, alias, found))
            elif verdict is None and self._unknown(dotted):
                yield self._report_unknown(alias, dotted, "")

    def _names_moved(self, node: ast.ImportFrom) -> bool:
        """Each name this statement imports has a move of its own (`Profiler` out of the removed
        `profiler.profiling`): they are reported, and fixed, one by one."""
        moves = [self.facts.move_of(f"{node.module}.{alias.name}") for alias in node.names]
        return all(
            move is not None and move.old == f"{node.module}.{alias.name}"
            for move, alias in zip(moves, node.names)
        )

    def _chain(self, node: ast.Attribute) -> Optional[Diagnostic]:
        """`ms.ms_function`, `vision.c_transforms`: the chain that ends in ``node`` names exactly
        something the target lacks (what lies inside it is reported at it, not again)."""
        named = self._through_import(node)
        if named is None:
            return None
        dotted, imported, unscoped = named
        if self.verdict(imported) is not None:
            return None  # the import of the missing module is reported, and fixed, there
        if self.verdict(unscoped.rpartition(".")[0]) is not None:
            return None  # inside a missing name (`cp.Validator.check_bool`): reported at that name
        if unscoped in self.missing.modules:
            verdict = _Verdict("module", unscoped)
        elif unscoped in self.missing.names:
            verdict = _Verdict("name", unscoped)
        else:
            return None
        if self.ctx.qualified_name(node) != unscoped:
            return None  # a local name shadows the import
        return self._report(node, verdict, f"`{dotted}`", self._chain_fix(node, verdict))

    def _through_import(self, node: ast.Attribute) -> Optional[tuple[str, str, str]]:
        """The chain that ends in ``node`` as written (`P.ControlDepend`), what its first name's
        MindSpore import binds (`mindspore.ops.operations`), and the two joined
        (`mindspore.ops.operations.ControlDepend`: the caller checks that no local shadows the
        import); None for a chain that starts elsewhere."""
        dotted = dotted_name(node)
        if dotted is None:
            return None
        root, _, rest = dotted.partition(".")
        binding = self.ctx.resolver.imports.get(root)
        if binding is None or not binding.qualified.startswith("mindspore"):
            return None
        return dotted, binding.qualified, f"{binding.qualified}.{rest}"

    def _unknown(self, dotted: str) -> bool:
        """Whether ``dotted`` is a name of a module listed whole that no release checked has."""
        module, _, name = dotted.rpartition(".")
        return (
            not name.startswith("_")
            and name != "*"
            and module in self.missing.whole
            and not _held(self.facts, dotted)
        )

    def _unknown_chain(self, node: ast.Attribute) -> Optional[Diagnostic]:
        """`P.ControlDepend`: a chain that asks a module listed whole for a name no release
        checked has (not inside another such name, not shadowed)."""
        named = self._through_import(node)
        if named is None:
            return None
        dotted, _, unscoped = named
        if not self._unknown(unscoped) or self.ctx.qualified_name(node) != unscoped:
            return None
        return self._report_unknown(node, unscoped, f"`{dotted}`")

    def _report_unknown(self, node: ast.AST, dotted: str, shown: str) -> Diagnostic:
        facts, module = self.facts, dotted.rpartition(".")[0]
        subject = f"{shown} (`{dotted}`)" if shown and shown.strip("`") != dotted else f"`{dotted}`"
        message = (
            f"{subject} is in no MindSpore release checked ({facts.checked()}): gone before "
            f"{facts.releases[0]}, or never a name of `{module}`; MindSpore names no replacement"
        )
        return self.rule.diagnostic(node, message, None, None)

    # --- messages --------------------------------------------------------------------------

    def _report(self, node: ast.AST, verdict: _Verdict, shown: str, fixed: Fixed) -> Diagnostic:
        fix = fixed if isinstance(fixed, Fix) else None
        facts, target = self.facts, self.missing.target
        subject = f"module `{verdict.name}`" if verdict.kind == "module" else f"`{verdict.name}`"
        if shown and shown.strip("`") != verdict.name:
            subject = f"{shown} ({subject})"
        last, first = facts.last_with(verdict.name, target), facts.first_with(verdict.name, target)
        if last is not None:
            where = f"last in {last} of the releases checked ({facts.checked()})"
        else:
            where = f"first in {first} of the releases checked ({facts.checked()})"
        message = f"{subject} is not in MindSpore {target}: {where}"
        move, new = self._respelling(verdict.name)
        if new is not None and not (facts.has_name(new, target) or facts.has_module(new, target)):
            new = None
        if new is not None and move is not None and move.kind == "members" and new == move.new:
            message += f"; its members are names of `{new}` now: use the module"
            if fix is None:
                message += f" (not fixed: {fixed})"
        elif new is not None:
            message += f"; use `{new}` instead"
            if fix is None:
                message += f" (not fixed: {fixed})"
        elif move is not None and move.review:
            message += f"; {move.review}"
        else:
            message += "; MindSpore names no replacement"
        return self.rule.diagnostic(node, message, fix, new)

    # --- fixes: each returns the fix, or why there is none -------------------------------

    def _going_back(self, written: str) -> bool:
        """Whether ``written`` is newer than the target (a downgrade's): a newer release has it,
        no older one does."""
        target = self.missing.target
        newer = self.facts.first_with(written, target) is not None
        return newer and self.facts.last_with(written, target) is None

    def _respelling(self, written: str) -> tuple[Optional[Move], Optional[str]]:
        """The move that covers ``written`` and what the target spells it: the new spelling of an
        old name, or going down, the old spelling of a new one."""
        move = self.facts.move_of(written)
        new = move.replacement(written) if move is not None else None
        if new is None and self._going_back(written):
            return self.facts.move_back(written, self.missing.target) or (move, None)
        return move, new

    def _new_for(self, old: str) -> Union[tuple[Move, str], str]:
        """The move of ``old`` and its spelling on the target, when the target has that spelling."""
        move, new = self._respelling(old)
        if move is None or new is None:
            return "no move declared"
        if move.review:
            return move.review
        if old in move.review_down and self._going_back(old):
            return move.review_down[old]
        target = self.missing.target
        if not (self.facts.has_name(new, target) or self.facts.has_module(new, target)):
            return f"MindSpore {target} has no {new} either"
        return move, new

    def _misfit(self, old: str, new: str, use: ast.AST) -> Optional[str]:
        """Why one use of ``old`` (as written) may not be spelled ``new``; None when the pair is
        proven equal and the use binds its arguments alike on both sides. Going down, the pair is
        the move's the other way round, and its proof must have run the old spelling on the
        target's own release: 1.7's c_transforms is not 2.7's."""
        target = self.missing.target
        back = self._going_back(old)
        pair = (new, old) if back else (old, new)
        proof = self.facts.proven.get(pair)
        if proof != "equal":
            return f"{pair[0]} -> {pair[1]} is not proven ({proof or 'no proof case'})"
        if back and not set(self.facts.around(target)) <= self.facts.proven_on.get(pair, frozenset()):
            return f"{pair[0]} -> {pair[1]} is not proven on MindSpore {target}"
        if back:
            why = self._pil_misfit(old, use)
            if why is not None:
                return why
        written_on = self.facts.first_with(old, target) if back else self.facts.last_with(old, target)
        if written_on is None:
            return f"no release checked has {old}"
        standing = self.facts.around(target)[0]
        call = self._call_of(use)
        if call is None and not (self.facts.callable_somewhere(old) or self.facts.callable_somewhere(new)):
            return None  # a value on both sides (`Rel.EQ`, `_checkparam.EQ`): its proof says it all
        through_kwargs = self.facts.proven_keywords.get(pair, frozenset())
        why = binds_alike(
            self.facts.signature(old, written_on), self.facts.signature(new, standing), call, through_kwargs
        )
        return None if why is None else f"line {use.lineno}: {why}"  # type: ignore[attr-defined]

    def _pil_misfit(self, written: str, use: ast.AST) -> Optional[str]:
        """Why ``use`` of a unified vision op may take a PIL image, which 1.7's c_transforms op
        does not: the file names PIL (`from PIL import Image`, `vision.ToPIL()`, `to_pil=True`),
        or the op is called at once on an input (`vision.Invert()(img)`), whose kind the proof,
        run on a numpy image, does not cover. None where neither is so."""
        moved = self.facts.move_back(written, self.missing.target)
        review = moved[0].review_down_pil if moved is not None else ""
        if not review:
            return None
        if self._names_pil:
            return review.format(where="file works with PIL images")
        call = self._call_of(use)
        applied = self.ctx.parent_of(call) if call is not None else None
        if call is not None and isinstance(applied, ast.Call) and applied.func is call:
            return review.format(where=f"op is called at once on an input (line {call.lineno})")
        return None

    @cached_property
    def _names_pil(self) -> bool:
        return _NAMES_PIL.search(self.ctx.text) is not None

    def _uses(self, local: str) -> Optional[list[ast.Name]]:
        """Every read of ``local`` in the file, or None when something else binds it too."""
        reads: list[ast.Name] = []
        bound = 0
        for node in self.ctx.nodes:
            if isinstance(node, ast.Name) and node.id == local:
                if isinstance(node.ctx, ast.Load):
                    reads.append(node)
                else:
                    bound += 1
            elif _binds(node, local):
                bound += 1
        return reads if bound == 1 else None

    def _call_of(self, node: ast.AST) -> Optional[ast.Call]:
        """The call ``node`` is the callee of; a bare decorator is a call with one argument."""
        parent = self.ctx.parent_of(node)
        if isinstance(parent, ast.Call) and parent.func is node:
            return parent
        if (
            isinstance(parent, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))
            and node in parent.decorator_list
        ):
            return ast.Call(func=node, args=[ast.Name(id=parent.name, ctx=ast.Load())], keywords=[])
        return None

    def _local_misfit(self, local: str, old: str, new: str) -> Optional[str]:
        uses = self._uses(local)
        if uses is None:
            return f"{local} is bound more than once in this file"
        return next(filter(None, (self._misfit(old, new, use) for use in uses)), None)

    def _module_alias_misfit(self, local: str, old_module: str, new_module: str) -> Optional[str]:
        """None when every use of ``local`` (bound to ``old_module``) is `local.name` and each
        fits its counterpart in ``new_module``."""
        uses = self._uses(local)
        if uses is None:
            return f"{local} is bound more than once in this file"
        for use in uses:
            parent = self.ctx.parent_of(use)
            if not (isinstance(parent, ast.Attribute) and parent.value is use):
                return f"line {use.lineno}: {local} is used as a value"
            why = self._member_misfit(old_module, new_module, parent)
            if why is not None:
                return why
        return None

    def _member_misfit(self, old_module: str, new_module: str, use: ast.Attribute) -> Optional[str]:
        """None when ``use`` (`<old_module>.name`) has its counterpart in ``new_module`` on the
        target, proven to bind alike."""
        old, new = f"{old_module}.{use.attr}", f"{new_module}.{use.attr}"
        if not self.facts.has_name(new, self.missing.target):
            return f"line {use.lineno}: MindSpore {self.missing.target} has no {new}"
        return self._misfit(old, new, use)

    def _edit(self, line: int, start: int, end: int, text: str) -> Edit:
        return Edit((line, column(self.lines, line, start)), (line, column(self.lines, line, end)), text)

    def _fix(self, edits: list[Edit], old: str, new: str) -> Fix:
        return Fix(tuple(edits), "exact", f"use {new} (moved from {old}; proven on both releases)")

    def _import_fix(self, alias: ast.alias, verdict: _Verdict) -> Fixed:
        """`import old.module as x` -> `import new.module as x`, when every `x.name` fits."""
        found = self._new_for(verdict.name)
        if isinstance(found, str):
            return found
        if verdict.kind != "module" or alias.asname is None or alias.name != verdict.name:
            return "an import without `as`"
        _, new = found
        why = self._module_alias_misfit(alias.asname, verdict.name, new)
        if why is not None:
            return why
        start = alias.col_offset
        return self._fix([self._edit(alias.lineno, start, start + len(alias.name), new)], verdict.name, new)

    def _module_text(self, node: ast.ImportFrom) -> Optional[tuple[int, int]]:
        """Byte offsets of the module in `from module import ...`, on the statement's first line."""
        line = self.lines[node.lineno - 1].encode("utf-8")
        start = line.find((node.module or "").encode("utf-8"), node.col_offset + len("from"))
        if start < 0:
            return None
        return start, start + len((node.module or "").encode("utf-8"))

    def _from_module_fix(self, node: ast.ImportFrom, verdict: _Verdict) -> Fixed:
        """`from old.module import a, b` -> `from new.module import a, b`, when every name fits."""
        found = self._new_for(verdict.name)
        if isinstance(found, str):
            return found
        if verdict.kind != "module" or node.module != verdict.name:
            return "a module inside the one that moved"
        return self._respelled_statement(node, found[1], verdict.name, found[1])

    def _from_name_fix(self, node: ast.ImportFrom, alias: ast.alias, verdict: _Verdict) -> Fixed:
        """`from M import old [as x]` -> `from M import new as old` (the local name stays), or
        for a single-name statement, `from N import new as old` when the move leaves M."""
        found = self._new_for(verdict.name)
        if isinstance(found, str):
            return found
        move, new = found
        local = alias.asname or alias.name
        new_module, _, new_name = new.rpartition(".")
        if verdict.kind == "module" or move.kind == "members":
            why = self._module_alias_misfit(local, verdict.name, new)
        else:
            why = self._local_misfit(local, verdict.name, new)
        if why is not None:
            return why
        spelled = new_name if new_name == local else f"{new_name} as {local}"
        if new_module == node.module:
            edit = self._edit(alias.lineno, alias.col_offset, alias.end_col_offset or 0, spelled)
            return self._fix([edit], verdict.name, new)
        if new_module.startswith(f"{node.module}."):
            return self._respelled_statement(node, new_module, verdict.name, new)
        if len(node.names) != 1 or node.lineno != node.end_lineno:
            return f"{new} lives in another module, and this statement imports other names too"
        edit = self._edit(
            node.lineno, node.col_offset, node.end_col_offset or 0, f"from {new_module} import {spelled}"
        )
        return self._fix([edit], verdict.name, new)

    def _respelled_statement(self, node: ast.ImportFrom, module: str, old: str, new: str) -> Fixed:
        """`from M import a, b` -> `from N import a, b`: M moved to N, or going down, a name the
        statement imports lives in N = M.sub on the target (`from mindspore.dataset.vision import
        Resize, Inter` on 1.7). Each name must be in N, one the target lacks in M must move
        there, and each use of it must be proven alike. Every name the target lacks gets the
        same fix; the first applied settles them all."""
        for alias in node.names:
            if alias.name == "*":
                return "a star import"
            written, spelled = f"{node.module}.{alias.name}", f"{module}.{alias.name}"
            if not self.facts.has_name(spelled, self.missing.target):
                return f"MindSpore {self.missing.target} has no {spelled}"
            if self.facts.has_name(written, self.missing.target) is False:
                respelled = self._new_for(written)
                if isinstance(respelled, str) or respelled[1] != spelled:
                    return f"{written} does not move to {spelled}"
            why = self._local_misfit(alias.asname or alias.name, written, spelled)
            if why is not None:
                return why
        offsets = self._module_text(node)
        if offsets is None:
            return "the module is not on the statement's first line"
        return self._fix([self._edit(node.lineno, *offsets, module)], old, new)

    def _chain_fix(self, node: ast.AST, verdict: _Verdict) -> Fixed:
        """`ms.ms_function` -> `ms.jit`: a moved name spelled through the same parent, when the
        new one lives in the module the chain's parent names."""
        found = self._new_for(verdict.name)
        if isinstance(found, str):
            return found
        if not isinstance(node, ast.Attribute):
            return "a module named through an attribute chain"
        if verdict.kind == "module":
            return self._chain_module_fix(node, verdict, found[1])
        _, new = found
        spelled = self._under(self.ctx.qualified_name(node.value), new)
        if spelled is None or not self._reached(node.value):
            return f"{new} lives in another module than this chain's parent"
        why = self._misfit(verdict.name, new, node)
        if why is not None:
            return why
        line = node.end_lineno or node.lineno
        if line != node.lineno:
            return "a chain over several lines"
        end = node.end_col_offset or 0
        start = end - len(node.attr.encode("utf-8"))
        return self._fix([self._edit(line, start, end, spelled)], verdict.name, new)

    def _chain_module_fix(self, node: ast.Attribute, verdict: _Verdict, new: str) -> Fixed:
        """`ds.vision.c_transforms.Resize` -> `ds.vision.Resize`: a moved module spelled as an
        attribute of the module it moved into, and one of its names taken from it at once."""
        use = self.ctx.parent_of(node)
        if not isinstance(use, ast.Attribute) or use.value is not node:
            return "a module named through an attribute chain"
        if self.ctx.qualified_name(node.value) != new or not self._reached(node.value):
            return f"{new} is not this chain's parent"
        why = self._member_misfit(verdict.name, new, use)
        if why is not None:
            return why
        line = node.lineno
        if node.value.end_lineno != line or node.end_lineno != line:
            return "a chain over several lines"
        edit = self._edit(line, node.value.end_col_offset or 0, node.end_col_offset or 0, "")
        return self._fix([edit], verdict.name, new)

    def _reached(self, chain: ast.expr) -> bool:
        """Whether the target has what ``chain`` names as an attribute of a module (`ds.vision`,
        `mindspore.dataset.vision`); a bare imported name is there by its import."""
        if not isinstance(chain, ast.Attribute):
            return True
        qualified = self.ctx.qualified_name(chain)
        return qualified is not None and self.facts.has_name(qualified, self.missing.target) is not False

    def _under(self, parent: Optional[str], new: str) -> Optional[str]:
        """``new`` as attributes of the module ``parent`` (`c_transforms.TypeCast` under
        `mindspore.dataset.transforms` on 1.7), where each step is a name the target has there;
        None where ``new`` does not lie under it."""
        if parent is None or not new.startswith(parent + "."):
            return None
        steps = new[len(parent) + 1 :].split(".")
        module = parent
        for step in steps[:-1]:
            module = f"{module}.{step}"
            if not self.facts.has_name(module, self.missing.target):
                return None
        return ".".join(steps)


# A file that works with PIL images: it imports PIL, or makes them with MindSpore's ops.
_NAMES_PIL = re.compile(r"\bPIL\b|\bToPIL\b|\bto_pil\b")


def _binds(node: ast.AST, local: str) -> bool:
    """Whether ``node`` (an import alias, a def or class, a parameter) binds ``local``."""
    if isinstance(node, ast.alias):
        return (node.asname or node.name.split(".")[0]) == local
    if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
        return node.name == local
    return isinstance(node, ast.arg) and node.arg == local
