"""The deprecation catalogues in ``rules/deprecations/``, loaded and indexed for one target.

Each ``X.Y.json`` was generated from an installed MindSpore X.Y by `ms-migrate catalogue build`
and is never edited by hand. For a target, the newest catalogue not newer than it is used (the
oldest one below them all), holding only what was deprecated by the target version.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable
from dataclasses import dataclass
from functools import cache, cached_property
from pathlib import Path
from typing import Optional

from ms_migrate.facts.data import rules_folder
from ms_migrate.facts.versions import Version

KINDS = ("api", "parameter", "module", "context-key")
TENSOR_CLASSES = ("mindspore.Tensor", "mindspore.common.tensor.Tensor", "mindspore.common.Tensor")


@dataclass(frozen=True)
class Deprecation:
    """One catalogue entry: an API, a keyword parameter, a module or a `set_context` key."""

    names: tuple[str, ...]  # every public dotted name of it; the first is the one to show
    kind: str
    since: Optional[str]
    replacement: Optional[str]
    rename: bool  # the replacement is a drop-in: same object or same signature
    channel: str
    parameter: Optional[str] = None  # for kinds parameter and context-key

    @property
    def name(self) -> str:
        return self.names[0]

    @property
    def dotted_replacement(self) -> Optional[str]:
        """The replacement when it is a public dotted name rather than free text."""
        text = self.replacement or ""
        return text if re.fullmatch(r"mindspore(\.[A-Za-z_]\w*)+", text) else None


@dataclass(frozen=True)
class Catalogue:
    """What is deprecated on one target, indexed by the names code can use."""

    mindspore: str  # the version the catalogue was generated from
    target: Version
    apis: dict[str, Deprecation]  # qualified name -> entry (Tensor methods as mindspore.Tensor.x)
    modules: dict[str, Deprecation]
    parameters: dict[tuple[str, str], Deprecation]  # (callable, keyword) -> entry, context keys too
    words: frozenset[str]  # identifiers one of which a file must contain to be worth parsing

    def module_of(self, qualified: str) -> Optional[Deprecation]:
        """The deprecated module that ``qualified`` is or lies in, the longest one first."""
        parts = qualified.split(".")
        for end in range(len(parts), 1, -1):
            found = self.modules.get(".".join(parts[:end]))
            if found is not None:
                return found
        return None

    @cached_property
    def tensor_methods(self) -> dict[str, Deprecation]:
        """Deprecated Tensor methods by method name."""
        methods: dict[str, Deprecation] = {}
        for name, entry in self.apis.items():
            for cls in TENSOR_CLASSES:
                if name.startswith(cls + ".") and name.count(".") == cls.count(".") + 1:
                    methods[name.rsplit(".", 1)[1]] = entry
        return methods

    @cached_property
    def tensor_keywords(self) -> frozenset[tuple[str, str]]:
        """(method, keyword) for the deprecated keywords of Tensor methods."""
        return frozenset(
            (name[len(cls) + 1 :], keyword)
            for name, keyword in self.parameters
            for cls in TENSOR_CLASSES
            if name.startswith(cls + ".")
        )

    @cached_property
    def callables(self) -> frozenset[str]:
        """The APIs some of whose keywords (or set_context keys) are deprecated."""
        return frozenset(name for name, _ in self.parameters)

    @cached_property
    def pattern(self) -> re.Pattern[str]:
        return re.compile(self._pattern_source)

    @cached_property
    def byte_pattern(self) -> re.Pattern[bytes]:
        """``pattern`` for UTF-8 bytes: the same matches in a text that is all ASCII. Compiled
        from the same source, without compiling ``pattern``: each takes tens of milliseconds, a
        good part of a pre-commit run over one file."""
        return re.compile(self._pattern_source.encode("utf-8"))

    @cached_property
    def byte_words(self) -> frozenset[bytes]:
        """``words`` as UTF-8 bytes, to look a text's words up in."""
        return frozenset(word.encode("utf-8") for word in self.words)

    @cached_property
    def _pattern_source(self) -> str:
        return word_pattern_source(self.words)

    @cached_property
    def name_words(self) -> frozenset[str]:
        """The words that are the last part of a deprecated API or module: code names them as an
        attribute (`ops.x`, `import a.x`) or among an import's names (`from a import x`)."""
        return frozenset(name.rsplit(".", 1)[1] for name in (*self.apis, *self.modules))

    @cached_property
    def tensor_words(self) -> frozenset[str]:
        """Name words whose every API lies under a class named Tensor: no spelling reaches one
        without the word `Tensor` in the text (an import of the class, or a call of it)."""
        outside = {name.rsplit(".", 1)[1] for name in (*self.apis, *self.modules) if not _under_tensor(name)}
        return self.name_words - outside

    @cached_property
    def keyword_owners(self) -> dict[str, tuple[frozenset[str], frozenset[str]]]:
        """For each deprecated keyword (or `set_context` key): the last parts of the callables it
        belongs to, those outside a Tensor class and those under one."""
        owners: dict[str, tuple[set[str], set[str]]] = {}
        for callable_, keyword in self.parameters:
            outside, tensor = owners.setdefault(keyword, (set(), set()))
            (tensor if _under_tensor(callable_) else outside).add(callable_.rsplit(".", 1)[1])
        return {
            keyword: (frozenset(outside), frozenset(tensor)) for keyword, (outside, tensor) in owners.items()
        }


def _under_tensor(name: str) -> bool:
    return "Tensor" in name.split(".")[:-1]


def available() -> list[Version]:
    """The versions that have a catalogue, oldest first."""
    folder = rules_folder("deprecations")
    if folder is None:
        return []
    found = []
    for path in folder.glob("*.json"):
        try:
            found.append(Version.parse(path.stem))
        except ValueError:
            continue
    return sorted(found)


@cache
def catalogue_for(target: Version) -> Optional[Catalogue]:
    """What is deprecated on ``target``; None where no catalogue is installed."""
    versions = available()
    if not versions:
        return None
    chosen = max((version for version in versions if version <= target), default=versions[0])
    folder = rules_folder("deprecations")
    assert folder is not None
    return _index(_load(folder / f"{chosen}.json"), chosen, target)


def _load(path: Path) -> tuple[str, list[Deprecation]]:
    data = json.loads(path.read_text(encoding="utf-8"))
    entries = [
        Deprecation(
            names=tuple(item["names"]),
            kind=item["kind"],
            since=item.get("since"),
            replacement=item.get("replacement"),
            rename=bool(item.get("rename")),
            channel=item["channel"],
            parameter=item.get("parameter"),
        )
        for item in data["entries"]
    ]
    return data["mindspore"], entries


def _in_force(entry: Deprecation, catalogue_version: Version, target: Version) -> bool:
    if entry.since is None:
        return catalogue_version <= target
    try:
        return Version.parse(entry.since) <= target
    except ValueError:
        return catalogue_version <= target


def _index(loaded: tuple[str, list[Deprecation]], version: Version, target: Version) -> Catalogue:
    mindspore, entries = loaded
    apis: dict[str, Deprecation] = {}
    modules: dict[str, Deprecation] = {}
    parameters: dict[tuple[str, str], Deprecation] = {}
    words: set[str] = set()
    for entry in entries:
        if entry.kind not in KINDS or not _in_force(entry, version, target):
            continue
        for name in entry.names:
            if entry.kind == "api":
                apis.setdefault(name, entry)
            elif entry.kind == "module":
                modules.setdefault(name, entry)
            elif entry.parameter:
                parameters.setdefault((name, entry.parameter), entry)
        if entry.kind in ("api", "module"):
            words.update(name.rsplit(".", 1)[-1] for name in entry.names)
        elif entry.parameter:
            words.add(entry.parameter)
    return Catalogue(mindspore, target, apis, modules, parameters, frozenset(words))


def word_pattern(words: Iterable[str]) -> re.Pattern[str]:
    """One regular expression matching any of ``words`` as a whole identifier, built as a trie so
    that a scan costs about the same for a thousand words as for one."""
    return re.compile(word_pattern_source(words))


def word_pattern_source(words: Iterable[str]) -> str:
    alternation = word_alternation(words)
    return rf"\b{alternation}\b" if alternation else r"(?!x)x"


def word_alternation(words: Iterable[str]) -> str:
    """``words`` as one trie-shaped regular expression group, to build other patterns with; an
    empty string for no words."""
    trie: dict = {}
    for word in words:
        node = trie
        for char in word:
            node = node.setdefault(char, {})
        node[""] = {}

    def alternatives(node: dict) -> str:
        branches = [re.escape(char) + alternatives(child) for char, child in sorted(node.items()) if char]
        if not branches:
            return ""
        if len(branches) == 1 and "" not in node:
            return branches[0]
        group = f"(?:{'|'.join(branches)})"
        return f"{group}?" if "" in node else group

    return alternatives(trie)
