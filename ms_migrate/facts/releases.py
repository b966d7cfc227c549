"""What each MindSpore release has: the facts in ``rules/releases/``, loaded for the rules.

``api.json`` is generated from the real releases (``python -m ms_migrate.catalogue releases``):
for every public module and name, the releases checked that have it, and for the modules the
declared moves name, each callable's parameters on each release. ``moves.json`` declares, by
hand and with its source, what MindSpore moved or renamed. ``proofs.json`` (``python -m
ms_migrate.catalogue prove``) says which pairs ran with the same numbers on both sides: a pair
that did not is never a fix.

A target between two releases checked (2.0-2.6 lie between 1.10 and 2.7) lacks a name only when
both of them lack it; a target past the newest is read as the newest.
"""

from __future__ import annotations

import ast
import json
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from functools import cache, cached_property
from typing import Any, Callable, Optional

from ms_migrate.facts.data import rules_path
from ms_migrate.facts.deprecations import catalogue_for
from ms_migrate.facts.versions import Version, default_target

Parameter = tuple[str, str, Optional[str]]  # name, kind as inspect names it, default's repr
POSITIONAL = ("POSITIONAL_ONLY", "POSITIONAL_OR_KEYWORD")
KEYWORD = ("POSITIONAL_OR_KEYWORD", "KEYWORD_ONLY")


@dataclass(frozen=True)
class Move:
    """A name or module MindSpore moved: ``new`` is None where nothing replaces it."""

    old: str
    new: Optional[str]
    kind: str  # "name", "module", or "members" (a class's members, now names of the module ``new``)
    review: str  # why no use of it is fixed; "" where a use that binds alike is
    source: str
    # a name of the new side -> why a downgrade writes its old spelling for no use of it
    review_down: Mapping[str, str] = field(default_factory=dict, compare=False)
    # why a downgrade writes no old spelling where the input may be a PIL image ({where}: which)
    review_down_pil: str = ""

    def replacement(self, old_name: str) -> Optional[str]:
        """The new spelling of ``old_name``: the move's own, or for a module move the same name
        in the new module (for a members move, a member's name there)."""
        if self.new is None:
            return None
        if old_name == self.old:
            return self.new
        if self.kind in ("module", "members") and old_name.startswith(self.old + "."):
            return self.new + old_name[len(self.old) :]
        return None

    def origin(self, new_name: str) -> Optional[str]:
        """The old spelling of ``new_name``, the inverse of `replacement` (a downgrade writes it):
        the move's own, or for a module move the same name in the old module. None for a members
        move, whose members no one name stands for."""
        if self.new is None or self.kind == "members":
            return None
        if new_name == self.new:
            return self.old
        if self.kind == "module" and new_name.startswith(self.new + "."):
            return self.old + new_name[len(self.new) :]
        return None


@dataclass(frozen=True)
class ApiFacts:
    releases: tuple[Version, ...]  # the releases checked, oldest first
    labels: dict[Version, str]  # 1.10 -> "1.10.0"
    modules: dict[str, frozenset[Version]]
    names: dict[str, frozenset[Version]]  # "module.name" -> releases
    signatures: Mapping[str, Signatures]
    moves: tuple[Move, ...]
    proven: dict[tuple[str, str], str]  # (old, new) -> "equal" or why not
    probes: dict[str, tuple[tuple[frozenset[Version], Any], ...]]  # what running each release gave
    # (old, new) -> the keywords its equal cases passed where both sides take only **kwargs
    proven_keywords: dict[tuple[str, str], frozenset[str]] = field(default_factory=dict)
    # "module.name": what a module listed whole holds besides its names (another package's
    # objects, lazy ones that failed to load), in any release checked
    foreign: frozenset[str] = frozenset()
    # (old, new) -> the releases whose old side ran with the new side's numbers: a downgrade
    # writes the old spelling only for a target its proof ran the old side on
    proven_on: dict[tuple[str, str], frozenset[Version]] = field(default_factory=dict)
    # (callable, parameter) -> the releases on which leaving the parameter out ran as it does on
    # the target, where its default changed: the new default does what the old one did
    same_default: dict[tuple[str, str], frozenset[Version]] = field(default_factory=dict)
    # "module.name" of a callable whose signature is listed -> the module that defines it, by
    # the releases that agree ("mindspore.nn.Dense" -> "mindspore.nn.layer.basic")
    origins: Mapping[str, tuple[tuple[frozenset[Version], str], ...]] = field(default_factory=dict)

    @cached_property
    def renames(self) -> tuple[Move, ...]:
        """Modules a release renamed, keeping the old name as a deprecated redirect (2.9's
        `mindspore.common.api` -> `mindspore.graph.api`), as module moves: read from the newest
        deprecation catalogue on first need (going down, or a signature the releases export under
        the old module only), not by every run that reads the facts."""
        catalogue = catalogue_for(default_target())
        entries = catalogue.modules.values() if catalogue is not None else ()
        return tuple(
            Move(
                entry.name,
                entry.dotted_replacement,
                "module",
                "",
                f"deprecated in {entry.since}: use {entry.replacement}",
            )
            for entry in entries
            if entry.rename and entry.dotted_replacement
        )

    def probe(self, name: str, target: Version) -> Any:
        """What the probe ``name`` gave on the releases that stand for ``target``; None where they
        disagree (a target between two releases checked that differ) or none answered."""
        answers = [
            answer
            for releases, answer in self.probes.get(name, ())
            for release in self.around(target)
            if release in releases
        ]
        return answers[0] if answers and all(answer == answers[0] for answer in answers) else None

    def probe_releases(self, name: str, answer: Any) -> list[Version]:
        """The releases checked whose probe ``name`` gave ``answer``."""
        return sorted(
            release
            for releases, given in self.probes.get(name, ())
            if given == answer
            for release in releases
        )

    def probe_span(self, name: str, answer: Any) -> str:
        """Those releases as a message says them: "1.7-1.10", "2.8", or "none checked"."""
        found = self.probe_releases(name, answer)
        return f"{found[0]}-{found[-1]}" if len(found) > 1 else str(found[0]) if found else "none checked"

    def change(
        self, name: str, written_for: Optional[Version], target: Version, known: Callable[[Any], bool]
    ) -> Optional[tuple[Any, Any]]:
        """(the answer of ``written_for``'s releases, the target's) to the probe ``name`` where
        both are ``known`` answers and differ: a change of meaning between the release the code
        is written for and the target. None where it is unknown or nothing changed."""
        if written_for is None:
            return None
        old, new = self.probe(name, written_for), self.probe(name, target)
        if not known(old) or not known(new) or old == new:
            return None
        return old, new

    def around(self, target: Version) -> tuple[Version, ...]:
        """The releases checked that stand for ``target``: itself, or the two either side of it."""
        lower = [release for release in self.releases if release <= target]
        upper = [release for release in self.releases if release >= target]
        return tuple(sorted({*lower[-1:], *upper[:1]}))

    def _present(self, releases: Optional[frozenset[Version]], target: Version) -> Optional[bool]:
        if releases is None:
            return None
        return any(release in releases for release in self.around(target))

    def has_module(self, module: str, target: Version) -> Optional[bool]:
        """Whether ``target`` has ``module``; None where no release checked has it."""
        return self._present(self.modules.get(module), target)

    def has_name(self, dotted: str, target: Version) -> Optional[bool]:
        """Whether ``target`` has ``module.name``; None where no release checked has it."""
        return self._present(self.names.get(dotted), target)

    def missing_module(self, dotted: str, target: Version) -> Optional[str]:
        """The longest module of ``dotted`` (itself or a parent) that some release has and
        ``target`` lacks, or None."""
        parts = dotted.split(".")
        for end in range(len(parts), 1, -1):
            module = ".".join(parts[:end])
            if self.has_module(module, target) is False:
                return module
        return None

    def last_with(self, dotted: str, target: Version) -> Optional[Version]:
        """The newest release older than ``target`` that has ``dotted`` (a module or a name)."""
        releases = self.modules.get(dotted) or self.names.get(dotted) or frozenset()
        return max((release for release in releases if release < target), default=None)

    def first_with(self, dotted: str, target: Version) -> Optional[Version]:
        """The oldest release newer than ``target`` that has ``dotted``."""
        releases = self.modules.get(dotted) or self.names.get(dotted) or frozenset()
        return min((release for release in releases if release > target), default=None)

    def callable_somewhere(self, dotted: str) -> bool:
        """Whether some release lists ``dotted`` as a callable (with a signature, read or not)."""
        return dotted in self.signatures

    def signature(self, dotted: str, release: Version) -> Optional[tuple[Parameter, ...]]:
        """The parameters of ``dotted`` on ``release``; for a name of a renamed module, which the
        releases export under the old module only, the old spelling's there: the old module is a
        redirect to the new one (the catalogue's `rename`), so both name one object."""
        for releases, parameters in self.signatures.get(dotted, ()):
            if release in releases:
                return parameters
        for move in self.renames:
            old = move.origin(dotted)
            if old is not None:
                return self.signature(old, release)
        return None

    def signature_around(self, dotted: str, version: Version) -> Optional[tuple[Parameter, ...]]:
        """The parameters of ``dotted`` on the releases checked that stand for ``version`` (itself,
        or the two either side of it, as ``probe`` reads them): None where they differ or one
        lacks it, so code written for 2.3 is compared only where 1.10 and 2.7 agree."""
        found = {self.signature(dotted, release) for release in self.around(version)}
        return found.pop() if len(found) == 1 else None

    def spellings(self, dotted: str, releases: Iterable[Version]) -> frozenset[str]:
        """The names code reaches the callable ``dotted`` by on ``releases``: itself, and its last
        part in each package between the module that exports it and the one that defines it
        (`mindspore.nn.Dense`: `mindspore.nn.layer.Dense`, `mindspore.nn.layer.basic.Dense`).
        Only the path to its definition: `mindspore.nn.probability.bijector.Softplus` is another
        object than `mindspore.nn.Softplus`."""
        exporter, _, last = dotted.rpartition(".")
        found = {dotted}
        wanted = set(releases)
        for present, origin in self.origins.get(dotted, ()):
            if not present & wanted:
                continue
            parts = origin.split(".")
            for end in range(len(exporter.split(".")) + 1, len(parts) + 1):
                found.add(".".join(parts[:end]) + "." + last)
        return frozenset(found)

    def move_of(self, old_name: str) -> Optional[Move]:
        """The declared move that covers ``old_name`` (the longest old spelling first)."""
        found = [move for move in self.moves if move.old == old_name or old_name.startswith(move.old + ".")]
        return max(found, key=lambda move: len(move.old), default=None)

    def move_back(self, new_name: str, target: Version) -> Optional[tuple[Move, str]]:
        """The one declared move whose new side covers ``new_name`` and whose old spelling of it
        ``target`` has, with that spelling: what a downgrade writes for a name its target lacks
        (1.7's `transforms.c_transforms.TypeCast` for `transforms.TypeCast`, first in 1.8). None
        where no move leads there, or several do (py_transforms and c_transforms both became
        `vision`: only the one without a review is a candidate)."""
        found = []
        for move in (*self.moves, *self.renames):
            old = move.origin(new_name) if not move.review else None
            if old is not None and (self.has_name(old, target) or self.has_module(old, target)):
                found.append((move, old))
        return found[0] if len(found) == 1 else None

    def checked(self) -> str:
        """The releases checked, as a reader wants them: "1.7-1.10, 2.7-2.10"."""
        runs: list[list[Version]] = []
        for release in self.releases:
            if runs and runs[-1][-1].major == release.major and release.minor == runs[-1][-1].minor + 1:
                runs[-1].append(release)
            else:
                runs.append([release])
        return ", ".join(str(run[0]) if len(run) == 1 else f"{run[0]}-{run[-1]}" for run in runs)


def binds_alike(
    old: Optional[tuple[Parameter, ...]],
    new: Optional[tuple[Parameter, ...]],
    call: Optional[ast.Call],
    through_kwargs: frozenset[str] = frozenset(),
) -> Optional[str]:
    """None when ``call`` (None: a use that is not a call) binds its arguments to the same
    parameters of ``old`` and ``new``, with the same defaults for those it leaves out; else why not.

    A parameter the new side added must have a default; one the old side had and the call
    leaves out may be gone from the new side (what its default did is the pair's proof to show).
    A use that is not a call needs the same signature on both sides. A keyword that both sides
    take only through **kwargs binds alike where the pair's proof passed it (``through_kwargs``):
    what each side does with it is what the proof ran."""
    if old is None or new is None:
        return "a signature that cannot be read"
    if call is None:
        return None if old == new else "not called here, and the signatures differ"
    if any(isinstance(arg, ast.Starred) for arg in call.args) or any(kw.arg is None for kw in call.keywords):
        return "arguments passed with * or **"
    old_named = {parameter[0]: parameter for parameter in old}
    new_named = {parameter[0]: parameter for parameter in new}
    passed: set[str] = set()
    for index in range(len(call.args)):
        before, after = positional_parameter(old, index), positional_parameter(new, index)
        if before is None or after is None:
            return f"positional argument {index + 1} has no positional parameter on one side"
        if (before[1] == "VAR_POSITIONAL") != (after[1] == "VAR_POSITIONAL"):
            return f"positional argument {index + 1} lands on {before[0]} / {after[0]}"
        passed.update((before[0], after[0]))
    for keyword in call.keywords:
        name = keyword.arg or ""
        before, after = old_named.get(name), new_named.get(name)
        if before is None and after is None and name in through_kwargs and _takes_kwargs(old, new):
            passed.add(name)
            continue
        if before is None or after is None or before[1] not in KEYWORD or after[1] not in KEYWORD:
            return f"keyword {name}= has no parameter of that name on one side"
        passed.add(name)
    for name, kind, default in old:
        counterpart = new_named.get(name)
        if name in passed or kind.startswith("VAR_") or counterpart is None:
            continue
        if counterpart[2] != default:
            return f"the default of {name} changed from {default} to {counterpart[2]}"
    for name, kind, default in new:
        if name not in passed and name not in old_named and default is None and not kind.startswith("VAR_"):
            return f"the new side requires {name}"
    return None


def _takes_kwargs(*sides: tuple[Parameter, ...]) -> bool:
    return all(any(kind == "VAR_KEYWORD" for _, kind, _ in side) for side in sides)


def positional_parameter(parameters: Sequence[Parameter], index: int) -> Optional[Parameter]:
    """The parameter a positional argument at ``index`` binds to: a named one, or *args."""
    for position, parameter in enumerate(parameters):
        if parameter[1] == "VAR_POSITIONAL":
            return parameter
        if position == index:
            return parameter if parameter[1] in POSITIONAL else None
    return None


def _parameters(listed: Optional[list[list[Any]]]) -> Optional[tuple[Parameter, ...]]:
    if listed is None:  # a callable whose signature the generator could not read
        return None
    return tuple((str(name), str(kind), default) for name, kind, default in listed)


class _Spans:
    """The releases a spec names (`2.7-2.9,2.11`: ranges in the data's order of releases), each
    spec read once: a few hundred specs stand for tens of thousands of names."""

    def __init__(self, order: list[str]) -> None:
        self.versions = tuple(Version.parse(release) for release in order)
        self.position = {release: index for index, release in enumerate(order)}
        self.known: dict[str, frozenset[Version]] = {}

    def __call__(self, spec: str) -> frozenset[Version]:
        found = self.known.get(spec)
        if found is None:
            releases: set[Version] = set()
            for part in spec.split(","):
                first, _, last = part.partition("-")
                releases.update(self.versions[self.position[first] : self.position[last or first] + 1])
            found = self.known[spec] = frozenset(releases)
        return found


Signatures = tuple[tuple[frozenset[Version], Optional[tuple[Parameter, ...]]], ...]


class _Signatures(Mapping[str, Signatures]):
    """Each callable's parameters, by the releases that have them, read from the data when first
    asked for: a rule asks for a few of 1,330, and reading all made a fifth of every run's
    start-up (a pre-commit hook's, on one file)."""

    def __init__(self, data: dict[str, dict[str, Any]], spans: _Spans) -> None:
        self._data, self._spans = data, spans
        self._read: dict[str, Signatures] = {}

    def __getitem__(self, dotted: str) -> Signatures:
        found = self._read.get(dotted)
        if found is None:
            by_spec = self._data[dotted]
            found = tuple((self._spans(spec), _parameters(listed)) for spec, listed in by_spec.items())
            self._read[dotted] = found
        return found

    def __contains__(self, dotted: object) -> bool:
        return dotted in self._data

    def __iter__(self) -> Iterator[str]:
        return iter(self._data)

    def __len__(self) -> int:
        return len(self._data)


def _load_json(name: str) -> Optional[dict[str, Any]]:
    try:
        return json.loads(rules_path(name).read_text(encoding="utf-8"))
    except FileNotFoundError:
        return None


@cache
def api_facts() -> Optional[ApiFacts]:
    """The release facts this installation ships; None where it ships none."""
    data = _load_json("releases/api.json")
    if data is None:
        return None
    order = list(data["releases"])
    spans = _Spans(order)
    modules: dict[str, frozenset[Version]] = {}
    names: dict[str, frozenset[Version]] = {}
    for module, entry in data["modules"].items():
        modules[module] = spans(entry["in"])
        for spec, short_names in entry["names"].items():
            releases = spans(spec)
            for short in short_names:
                names[f"{module}.{short}"] = releases
    foreign = frozenset(
        f"{module}.{short}"
        for module, by_spec in data.get("foreign", {}).items()
        for short_names in by_spec.values()
        for short in short_names
    )
    for owner, by_spec in data.get("members", {}).items():  # a class's members, as names of it
        for spec, short_names in by_spec.items():
            releases = spans(spec)
            names.update((f"{owner}.{short}", releases) for short in short_names)
    signatures = _Signatures(data.get("signatures", {}), spans)
    origins = {
        dotted: tuple((spans(spec), origin) for spec, origin in by_spec.items())
        for dotted, by_spec in data.get("origins", {}).items()
    }
    moves_data = _load_json("releases/moves.json") or {"moves": []}
    moves = tuple(
        Move(
            item["old"],
            item.get("new"),
            item["kind"],
            item.get("review", ""),
            item.get("source", ""),
            item.get("review_down", {}),
            item.get("review_down_pil", ""),
        )
        for item in moves_data["moves"]
    )
    proofs = _load_json("releases/proofs.json") or {"pairs": []}
    proven: dict[tuple[str, str], str] = {}
    keywords: dict[tuple[str, str], frozenset[str]] = {}
    ran_on: dict[tuple[str, str], set[str]] = {}
    left_out: dict[tuple[str, str], set[str]] = {}
    for item in proofs["pairs"]:  # a pair with several cases is equal only when each is
        if "unchanged" in item:  # the same call on both sides: no fix pair, a default that means the same
            for parameter in item["unchanged"] if item["result"] == "equal" else ():
                left_out.setdefault((item["old"], parameter), set()).add(item.get("old_on", ""))
            continue
        key = (item["old"], item["new"])
        if proven.get(key, "equal") == "equal":
            proven[key] = item["result"]
        if item["result"] == "equal":
            keywords[key] = keywords.get(key, frozenset()) | frozenset(item.get("keywords", ()))
            ran_on.setdefault(key, set()).add(item.get("old_on", ""))
    releases = spans.versions
    labels = {Version.parse(release): label for release, label in data["releases"].items()}
    by_label = {label: release for release, label in labels.items()}
    proven_on = {
        key: frozenset(by_label[label] for label in on if label in by_label) for key, on in ran_on.items()
    }
    same_default = {
        key: frozenset(by_label[label] for label in on if label in by_label) for key, on in left_out.items()
    }
    probes = {
        name: tuple((spans(spec), answer) for spec, answer in by_spec.items())
        for name, by_spec in data.get("probes", {}).items()
    }
    return ApiFacts(
        releases,
        labels,
        modules,
        names,
        signatures,
        moves,
        proven,
        probes,
        keywords,
        foreign,
        proven_on,
        same_default,
        origins,
    )
