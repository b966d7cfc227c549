"""MS226: a call of MindSpore's whose arguments bind, or whose defaults are, otherwise on the target.

The releases' own signatures say it (rules/releases/api.json, read from each release by
`python -m ms_migrate.catalogue releases`): `ops.split(x, 1, 1)` splits along axis 1 into one
piece on 1.10 (`input_x, axis, output_num`) and into pieces of size 1 along axis 1 on 2.10
(`tensor, split_size_or_sections, axis`); `ops.max(x)` reduces axis 0 on 1.10 and every axis on
2.10; `nn.Dense(2, 3)` draws its weights from `'normal'` on 1.10 and He-uniform (`None`) on 2.10.
The call runs on both, and gives other numbers.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Collection, Iterable, Sequence
from dataclasses import dataclass
from functools import cache
from typing import Optional

from ms_migrate.analysis.held import Held, as_base_call, base_init_call, defines_init, how_held
from ms_migrate.context import FileContext
from ms_migrate.diagnostics import Diagnostic, Fix, Severity, source_lines
from ms_migrate.facts.releases import KEYWORD, ApiFacts, Parameter, api_facts, positional_parameter
from ms_migrate.facts.versions import Version
from ms_migrate.rewrite.text_edits import keywords_appended
from ms_migrate.rules.base import Example, Examples, Rule
from ms_migrate.rules.ms220_dropout_keep_prob import DROPOUT

# Spellings of one parameter that releases renamed without changing what it is: compared
# without underscores, case or a plural `s` (`keep_dims`, `keepdims`, `keepdim`), and `dim` as
# `axis`. Any other name at a position is another parameter.
_SAME_AS = {"dim": "axis"}
_SHOWN = 3  # differences listed in one finding; the rest are counted


class CallMeansOtherwise(Rule):
    """A call of a MindSpore function or class (`mindspore.ops`, `mindspore.nn` and the names the
    catalogue of moves reads) whose arguments bind to other parameters, or which leaves out a
    parameter whose default differs, on the target than on the release the code is written for.

    Three differences are reported, each read from both releases' signatures: a positional
    argument after the first that lands on another parameter, one of the two being at another
    place on the other side (`ops.split(x, 1, 1)`: `axis` on 1.10, `split_size_or_sections` on
    2.10, where `axis` is third); a parameter the call leaves out whose default differs
    (`nn.Dense`'s `weight_init`, `'normal'` on 1.10 and `None`, He-uniform, on 2.10); and a
    keyword the target does not take (a TypeError there). A parameter that only changed its name
    is the same one (`x2` and `other`; `keep_dims`, `keepdims`; `dim` for `axis`), and so are
    defaults that differ in case or say "none" either way (`()` and `None`), and a default whose
    new value a proof case ran as doing what the old one did: `TrainOneStepCell(net, opt)` trains
    alike on 1.10 (`sens=1.0`) and 2.10 (`sens=None`), three steps compared in both modes, and
    `ops.grid_sample(x, grid)` samples alike (`align_corners` False, then None)
    (rules/releases/proofs.json). A result in another order (`ops.max`
    returns `(indices, values)` on 1.x) does not show in a signature: MS227 runs each release to
    see it. Nor does a parameter dropped for another (`ops.std`'s `unbiased` for `ddof`).

    The release the code is written for is the project's pin below the target or `from-version`;
    without it the rule is silent. A release whose runtime was not read (2.3) is compared as the
    releases read either side of it (1.10 and 2.7) where those agree; where they differ, a call
    is reported with what it would mean if the release were as either ("may mean"), not fixed.
    A call that passes `*args` or `**kwargs` is reported with the defaults that differ among the
    parameters it does not name, unless those hold them (`nn.Dense(4, 3, **cfg)`), and not
    fixed; `nn.Dropout` is left to MS220, which rewrites it.

    A call by another spelling of the same object is the same call: through the packages on the
    way to where it is defined (`from mindspore.nn.loss import BCELoss`, `nn.layer.Dense`; the
    catalogue's `origins`), and a subclass's `super().__init__` (or `Base.__init__(self, ...)`),
    which binds to the base's parameters. A class held to be called elsewhere (`self.which_linear = nn.Dense`,
    `partial(nn.Conv2d, ...)`, a parameter's default, the base of a class without `__init__`)
    is reported with the defaults that differ, and not fixed: the calls it reaches are not
    followed. One in a tuple or list (`cell_types = (nn.Dense, nn.GELU)`) is taken for a type to
    test against, and left.

    Fix safety: exact, and only where every difference is a default and passing the old defaults
    on the target was run against leaving them out on the old release, with the same results
    (rules/releases/proofs.json): `nn.Dense(2, 3)` becomes `nn.Dense(2, 3, weight_init='normal',
    bias_init='zeros')`, whose weights after `set_seed(1)` on 2.10 are 1.10's (so for `nn.Conv1d`
    to `nn.Conv3dTranspose`, and `nn.BCELoss`'s `reduction='none'`). Elsewhere the old default
    need not be the old meaning (`ops.max(x, axis=0)` still returns its pair in 2.x's order), and
    the finding is left to read.
    See https://www.mindspore.cn/docs/en/r2.0/RELEASE.html and the release notes of each version.
    """

    code = "MS226"
    title = "a MindSpore call whose arguments or defaults mean something else on the target"
    kind = "lint"
    severity = Severity.WARNING
    compares_releases = True
    release_fix = True  # its fixes are pairs rules/releases/proofs.json ran
    prefilter = ("mindspore",)
    examples = Examples(
        valid=(
            Example("from mindspore import ops\nparts = ops.split(x, 1, 1)\n", written_for="2.7"),
            Example("from mindspore import ops\nproduct = ops.matmul(a, b)\n", written_for="1.10"),
            Example(
                "from mindspore import nn\ndense = nn.Dense(2, 3, weight_init='normal', bias_init='zeros')\n",
                written_for="1.10",
            ),
            Example("from mindspore import ops\nparts = ops.split(x, 1, 1)\n"),
        ),
        invalid=(
            Example("from mindspore import ops\nparts = ops.split(x, 1, 1)\n", written_for="1.10"),
            Example("from mindspore import ops\nlargest = ops.max(x)\n", written_for="1.10"),
            Example(
                "from mindspore import nn\ndense = nn.Dense(2, 3)\n",
                written_for="1.10",
                fixed="from mindspore import nn\n"
                "dense = nn.Dense(2, 3, weight_init='normal', bias_init='zeros')\n",
            ),
        ),
    )

    def applies_to(self, text: str, target: Version) -> bool:
        return target in self.targets and "mindspore" in text and _calls_any_changed(text)

    def check(self, ctx: FileContext) -> Iterable[Diagnostic]:
        facts = api_facts()
        written_for = ctx.written_for
        if facts is None or written_for is None or written_for == ctx.target:
            return
        changed = _changed(facts, written_for, ctx.target)
        spelled = _spelled(facts, changed, written_for, ctx.target)
        lines = source_lines(ctx.text)
        for call in ctx.calls_to(spelled):
            dotted = spelled[ctx.qualified_name(call.func) or ""]
            found = self._called(ctx, facts, dotted, changed[dotted], call, call.func, lines)
            if found is not None:
                yield found
        yield from self._held(ctx, facts, changed, spelled, lines)
        yield from self._unsure(ctx, facts)

    def _unsure(self, ctx: FileContext, facts: ApiFacts) -> Iterable[Diagnostic]:
        """For a release whose runtime was not read, the calls of what the releases read either
        side of it disagree on: what each would mean, as a finding, where the comparison of
        ``_changed`` can say nothing (`--from-version 2.0`: `nn.Dense`'s initialisers are 1.10's
        or 2.7's, and 2.10 has 2.7's)."""
        written_for = ctx.written_for
        assert written_for is not None
        unsure = _unsure(facts, written_for, ctx.target)
        if not unsure:
            return
        spelled = _spelled(facts, unsure, written_for, ctx.target, unsure=True)
        for call in ctx.calls_to(spelled):
            dotted = spelled[ctx.qualified_name(call.func) or ""]
            (lower, below), (upper, above), new = unsure[dotted]
            said = []
            for release, old in ((lower, below), (upper, above)):
                found = differences(
                    old, new, call, release, ctx.target, _same_defaults(facts, dotted, old, new)
                )
                if found:
                    said.append(f"if {written_for} is as {release}: {_shown(found)}")
            if not said:
                continue
            yield self.diagnostic(
                call.func,
                f"`{_short(dotted)}` may mean something else on MindSpore {ctx.target} than on "
                f"{written_for}, which this code is written for: no runtime of {written_for} was read, and "
                f"{lower} and {upper} differ on it; " + "; ".join(said),
            )

    def _called(
        self,
        ctx: FileContext,
        facts: ApiFacts,
        dotted: str,
        signatures: tuple[tuple[Parameter, ...], tuple[Parameter, ...]],
        call: ast.Call,
        at: ast.AST,
        lines: list[str],
        what: str = "",
        bound: Optional[ast.Call] = None,
    ) -> Optional[Diagnostic]:
        """The finding of one call of ``dotted`` (or of a base's `__init__` that calls it, whose
        arguments bind as ``bound``), at ``at``; fixed where every difference is a default a proof
        case passed."""
        written_for, (old, new) = ctx.written_for, signatures
        assert written_for is not None
        same = _same_defaults(facts, dotted, old, new)
        bound = bound or call
        unpacked = _unpacked(bound)
        if unpacked:
            return self._maybe(ctx, dotted, old, new, bound, at, what, unpacked, same)
        found = differences(old, new, bound, written_for, ctx.target, same)
        if not found:
            return None
        message = (
            f"{what}`{_short(dotted)}` means something else on MindSpore {ctx.target} than on {written_for}, "
            f"which this code is written for: {_shown(found)}"
        )
        kept = [item.kept for item in found]
        if None in kept or not _proven(facts, dotted, old, written_for, ctx.target):
            return self.diagnostic(at, message)
        passed = ", ".join(f"{name}={default}" for name, default in kept)  # type: ignore[misc]
        edit = keywords_appended(call, lines, passed)
        fix = Fix(
            (edit,), "exact", f"pass {written_for}'s defaults ({passed}), proven equal on both releases"
        )
        return self.diagnostic(at, message + f"; pass {passed} to keep {written_for}'s", fix)

    def _maybe(
        self,
        ctx: FileContext,
        dotted: str,
        old: tuple[Parameter, ...],
        new: tuple[Parameter, ...],
        call: ast.Call,
        at: ast.AST,
        what: str,
        unpacked: str,
        same: Collection[str],
    ) -> Optional[Diagnostic]:
        """A call that passes `*args` or `**kwargs`: which parameters those hold is not known, so
        the defaults that differ among the ones it does not name are said, unless they hold them
        (`nn.Dense(4, 3, **cfg)` was passed over in silence)."""
        written_for = ctx.written_for
        assert written_for is not None
        named = ast.Call(
            call.func,
            [arg for arg in call.args[: _first_starred(call)]],
            [keyword for keyword in call.keywords if keyword.arg is not None],
        )
        found = [
            item
            for item in differences(old, new, named, written_for, ctx.target, same)
            if item.kept is not None
        ]
        if not found:
            return None
        return self.diagnostic(
            at,
            f"{what}`{_short(dotted)}` may mean something else on MindSpore {ctx.target} than on "
            f"{written_for}, which this code is written for: unless {unpacked} passes them, {_shown(found)}",
        )

    def _held(
        self, ctx: FileContext, facts: ApiFacts, changed: Changed, spelled: dict[str, str], lines: list[str]
    ) -> Iterable[Diagnostic]:
        """Each place the file holds a changed callable instead of calling it: passed on
        (`self.which_linear = nn.Dense`, `partial(nn.Dense, ...)`), or a base of its class."""
        written_for = ctx.written_for
        assert written_for is not None
        words = _held_classes(ctx.text)
        for node in ctx.nodes_naming(words) if words else ():
            spelling = node.attr if isinstance(node, ast.Attribute) else getattr(node, "id", None)
            if spelling not in words or not isinstance(node, (ast.Name, ast.Attribute)):
                continue
            dotted = spelled.get(ctx.qualified_name(node) or "")
            held = how_held(node, ctx.parent_of) if dotted is not None else None
            if held is None or dotted is None:
                continue
            old, new = changed[dotted]
            holder = ctx.parent_of(node)
            if held is Held.BASE and isinstance(holder, ast.ClassDef):
                init = base_init_call(holder)
                if init is not None:
                    what = f"`{holder.name}`'s `{ast.unparse(init.func)}`: "
                    bound = as_base_call(init)
                    found = self._called(ctx, facts, dotted, (old, new), init, init.func, lines, what, bound)
                    if found is not None:
                        yield found
                    continue
                if defines_init(holder):
                    continue  # an __init__ that reaches the base otherwise, or not at all
            said = _left_out(old, new, written_for, ctx.target, _same_defaults(facts, dotted, old, new))
            if said is None:
                continue
            how = (
                f"`{holder.name}` derives from `{_short(dotted)}` and takes its parameters"  # type: ignore[union-attr]
                if held is Held.BASE
                else f"`{_short(dotted)}` is passed on here, not called"
            )
            yield self.diagnostic(
                node,
                f"{how}: a call of it that leaves these out means something else on MindSpore "
                f"{ctx.target} than on {written_for}, which this code is written for: {said}",
            )


def _unpacked(call: ast.Call) -> str:
    """How the call passes arguments it does not name (`*args`, `**cfg`), as the code spells
    them; "" where it names each one."""
    spelled = [f"*{ast.unparse(arg.value)}" for arg in call.args if isinstance(arg, ast.Starred)]
    spelled += [f"**{ast.unparse(keyword.value)}" for keyword in call.keywords if keyword.arg is None]
    return " or ".join(f"`{item}`" for item in spelled)


def _first_starred(call: ast.Call) -> int:
    starred = [index for index, arg in enumerate(call.args) if isinstance(arg, ast.Starred)]
    return starred[0] if starred else len(call.args)


def _short(dotted: str) -> str:
    return dotted.replace("mindspore.", "", 1)


def _shown(found: Sequence[Difference]) -> str:
    shown = "; ".join(item.said for item in found[:_SHOWN])
    return shown + (f"; and {len(found) - _SHOWN} more" if len(found) > _SHOWN else "")


def _left_out(
    old: tuple[Parameter, ...],
    new: tuple[Parameter, ...],
    written_for: Version,
    target: Version,
    same: Collection[str],
) -> Optional[str]:
    """The defaults that differ, which every call that leaves them out meets; None where none
    do. Which arguments a call elsewhere passes by position is not known here, so a parameter
    that moved is not said (`nn.MaxPool2d`'s `data_format`, fourth on 1.10)."""
    found = differences(old, new, ast.Call(ast.Name("_", ast.Load()), [], []), written_for, target, same)
    return _shown(found) if found else None


def _spelled(
    facts: ApiFacts, names: Collection[str], written_for: Version, target: Version, unsure: bool = False
) -> dict[str, str]:
    """Each name code reaches one of ``names`` by -> the callable (`mindspore.nn.layer.Dense`,
    `mindspore.nn.loss.BCELoss`: the packages on the way to where it is defined), once per pair
    of releases and kind (the changed callables, or the ``unsure`` ones of a release not read)."""
    key = (written_for, target, unsure)
    if key not in _SPELLED:
        releases = (*facts.around(written_for), *facts.around(target))
        spellings = {dotted: facts.spellings(dotted, releases) for dotted in names}
        _SPELLED[key] = {spelling: dotted for dotted, each in spellings.items() for spelling in each}
    return _SPELLED[key]


_SPELLED: dict[tuple[Version, Version, bool], dict[str, str]] = {}


def _proven(
    facts: ApiFacts, dotted: str, old: tuple[Parameter, ...], written_for: Version, target: Version
) -> bool:
    """Whether passing the old defaults on the target was run against leaving them out on the
    old release and gave the same (rules/releases/proofs.json), from a release with the same
    signature as the one the code is written for, upgrading."""
    ran_on = facts.proven_on.get((dotted, dotted), frozenset())
    return (
        written_for < target
        and facts.proven.get((dotted, dotted)) == "equal"
        and bool(ran_on)
        and all(facts.signature(dotted, release) == old for release in ran_on)
    )


def _same_defaults(
    facts: ApiFacts, dotted: str, old: tuple[Parameter, ...], new: tuple[Parameter, ...]
) -> frozenset[str]:
    """The parameters of ``dotted`` whose changed default a proof case left out on both sides
    with equal results, run on releases with these two signatures (the same call, so either
    way: upgrading or down)."""
    newest = facts.signature(dotted, max(facts.releases))
    return frozenset(
        name
        for name, _, _ in old
        if any(
            {facts.signature(dotted, release), newest} == {old, new}
            for release in facts.same_default.get((dotted, name), ())
        )
    )


@dataclass(frozen=True)
class Difference:
    """One thing a call does otherwise on the target: as the finding says it, and for a default
    that changed, the keyword that keeps the old one (the target's name, the old default)."""

    said: str
    kept: Optional[tuple[str, str]] = None


def _calls_any_changed(text: str) -> bool:
    """Whether ``text`` calls something by the last part of a name whose signature is not the
    same on every release that has it, or holds such a class: a file that does neither is not
    parsed for this rule."""
    patterns = _changed_names()
    return patterns is not None and any(pattern.search(text) for pattern in patterns)


@cache
def _changed_names() -> Optional[tuple[re.Pattern[str], re.Pattern[str]]]:
    """Two patterns over the last parts of the names whose signature is not the same on every
    release: a call of one, and a class of them held (`= nn.Dense`, `partial(nn.Dense, `,
    `class D(nn.Dense):`), whose group is the name."""
    facts = api_facts()
    signatures = facts.signatures if facts is not None else {}
    names = {
        dotted.rpartition(".")[2]
        for dotted in signatures
        if dotted not in DROPOUT and len({parameters for _, parameters in signatures[dotted]}) > 1
    }
    if not names:
        return None
    classes = sorted(re.escape(name) for name in names if name[:1].isupper()) or ["(?!)"]
    called = re.compile(r"\b(?:" + "|".join(sorted(map(re.escape, names))) + r")\s*\(")
    held = re.compile(r"\b(" + "|".join(classes) + r")[ \t]*(?:[,)\]}]|$)", re.MULTILINE)
    return called, held


def _held_classes(text: str) -> set[str]:
    """The changed classes ``text`` spells where it may hold one: the words ``_held`` looks for."""
    patterns = _changed_names()
    return set(patterns[1].findall(text)) if patterns is not None else set()


Changed = dict[str, tuple[tuple[Parameter, ...], tuple[Parameter, ...]]]
_CHANGED: dict[tuple[Version, Version], Changed] = {}  # of the one ApiFacts: per pair of releases


def _changed(facts: ApiFacts, written_for: Version, target: Version) -> Changed:
    """Each callable whose signature on ``target`` is not the one on ``written_for``, with both."""
    key = (written_for, target)
    if key not in _CHANGED:
        found = {}
        for dotted in facts.signatures:
            old, new = facts.signature_around(dotted, written_for), facts.signature_around(dotted, target)
            if old is not None and new is not None and old != new and dotted not in DROPOUT:
                found[dotted] = (old, new)
        _CHANGED[key] = found
    return _CHANGED[key]


Unsure = dict[
    str,
    tuple[
        tuple[Version, tuple[Parameter, ...]], tuple[Version, tuple[Parameter, ...]], tuple[Parameter, ...]
    ],
]
_UNSURE: dict[tuple[Version, Version], Unsure] = {}


def _unsure(facts: ApiFacts, written_for: Version, target: Version) -> Unsure:
    """Each callable on which the two releases read either side of ``written_for`` (a release
    not read) disagree, with theirs and the target's signatures."""
    key = (written_for, target)
    if key not in _UNSURE:
        around = facts.around(written_for)
        found: Unsure = {}
        if written_for not in facts.releases and len(around) == 2:
            lower, upper = around
            for dotted in facts.signatures:
                below, above = facts.signature(dotted, lower), facts.signature(dotted, upper)
                new = facts.signature_around(dotted, target)
                if None in (below, above, new) or below == above or dotted in DROPOUT:
                    continue
                found[dotted] = ((lower, below), (upper, above), new)  # type: ignore[assignment]
        _UNSURE[key] = found
    return _UNSURE[key]


def differences(
    old: Sequence[Parameter],
    new: Sequence[Parameter],
    call: ast.Call,
    written_for: Version,
    target: Version,
    same_defaults: Collection[str] = (),
) -> list[Difference]:
    """What ``call`` does otherwise with the ``new`` signature than with the ``old`` one; a
    default of ``same_defaults`` is proven to mean on the target what it meant before."""
    if any(isinstance(arg, ast.Starred) for arg in call.args) or any(kw.arg is None for kw in call.keywords):
        return []
    found: list[Difference] = []
    passed: set[str] = set()
    old_places = {_role(name): place for place, (name, _, _) in enumerate(old)}
    new_places = {_role(name): place for place, (name, _, _) in enumerate(new)}
    for index in range(len(call.args)):
        before, after = positional_parameter(old, index), positional_parameter(new, index)
        if before is None or "VAR_POSITIONAL" in (before[1], after[1] if after else ""):
            return found  # the old side took no such argument, or took any number
        passed.add(_role(before[0]))
        if after is None:
            found.append(Difference(f"MindSpore {target} takes no argument {index + 1}"))
        elif index and _moved(_role(before[0]), _role(after[0]), old_places, new_places):
            moved = f"argument {index + 1} is `{before[0]}` on {written_for} and `{after[0]}` on {target}"
            found.append(Difference(moved))
    new_named = {_role(name): (name, kind, default) for name, kind, default in new}
    takes_any = any(kind == "VAR_KEYWORD" for _, kind, _ in new)
    for keyword in call.keywords:
        name = keyword.arg or ""
        passed.add(_role(name))
        if name in {item[0] for item in old} and name not in {item[0] for item in new} and not takes_any:
            spelled = new_named.get(_role(name))
            gone = f"`{name}=` is no parameter on {target}" + (f" (`{spelled[0]}=`)" if spelled else "")
            found.append(Difference(gone))
    for name, kind, default in old:
        counterpart = new_named.get(_role(name))
        if default is None or kind.startswith("VAR_") or _role(name) in passed or counterpart is None:
            continue
        if name in same_defaults:
            continue
        if counterpart[1] in KEYWORD and not _same_default(default, counterpart[2]):
            said = f"`{name}` defaults to {default} on {written_for} and {counterpart[2]} on {target}"
            found.append(Difference(said, (counterpart[0], default)))
    return found


def _moved(before: str, after: str, old_places: dict[str, int], new_places: dict[str, int]) -> bool:
    """Whether an argument landing on ``before`` (old) and ``after`` (new) finds another
    parameter there: one of the two is at another place on the other side (`ops.split`'s `axis`,
    second on 1.10 and third on 2.10). A name that only changed (`x2`, `other`) is a rename."""
    return before != after and (
        new_places.get(before, old_places[before]) != old_places[before]
        or old_places.get(after, new_places[after]) != new_places[after]
    )


def _same_default(old: Optional[str], new: Optional[str]) -> bool:
    """Defaults that mean the same: equal, a string in other case (`'valid'`, `'VALID'`), or no
    value either way (`()`, `None`: every axis)."""
    if old == new:
        return True
    if old is None or new is None:
        return False
    return old.lower() == new.lower() or {old, new} <= _NOTHING


_NOTHING = {"None", "()", "[]"}


def _role(name: str) -> str:
    """What a parameter is, across the spellings releases gave it."""
    plain = name.replace("_", "").lower()
    if plain.endswith("s") and not plain.endswith(("is", "ss", "us")) and len(plain) > 3:
        plain = plain[:-1]  # `keepdims`, `keepdim`; not `axis`, `bias`
    return _SAME_AS.get(plain, plain)
