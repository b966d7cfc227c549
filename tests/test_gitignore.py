"""The .gitignore matcher decides as pathspec's GitIgnoreSpec does, at about git's cost."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from ms_migrate.files.gitignore import IgnoreFile

NAMES = ["a", "b", "src", "build", "x.pyc", "y.tar.gz", ".env", "data"]
PATTERNS = st.one_of(
    st.sampled_from(
        ["a", "b/", "build", "/build", "src/a", "/src/b/", "*.pyc", "*.gz", "*.tar.gz", ".env", "data/"]
    ),
    st.sampled_from(
        ["!a", "!build/", "!*.pyc", "!/src/a", "a*", "s?c", "**/b", "src/**", "# c", "", "x.pyc "]
    ),
)


def _pathspec_decision(lines: list[str], relative: str, is_dir: bool):  # type: ignore[no-untyped-def]
    import pathspec

    return pathspec.GitIgnoreSpec.from_lines(lines).check_file(relative + "/" if is_dir else relative).include


@settings(max_examples=1500, deadline=None)
@given(
    st.lists(PATTERNS, max_size=8),
    st.lists(st.sampled_from(NAMES), min_size=1, max_size=4),
    st.booleans(),
)
def test_it_decides_as_pathspec_does(lines: list[str], parts: list[str], is_dir: bool) -> None:
    relative = "/".join(parts)
    assert IgnoreFile(lines).decide(relative, is_dir) == _pathspec_decision(lines, relative, is_dir)


@settings(max_examples=400, deadline=None)
@given(
    st.lists(PATTERNS, max_size=8),
    st.lists(
        st.tuples(st.lists(st.sampled_from(NAMES), min_size=1, max_size=4), st.booleans()),
        min_size=2,
        max_size=12,
    ),
)
def test_one_matcher_decides_many_paths_of_shared_folders_as_pathspec_does(
    lines: list[str], paths: list[tuple[list[str], bool]]
) -> None:
    """What the folders above a path match is kept per folder and reused for the next entry of
    the same folder: a walk asks one matcher about every file, and each answer must stay its own."""
    import pathspec

    spec = pathspec.GitIgnoreSpec.from_lines(lines)
    matcher = IgnoreFile(lines)
    for parts, is_dir in paths:
        relative = "/".join(parts)
        expected = spec.check_file(relative + "/" if is_dir else relative).include
        assert matcher.decide(relative, is_dir) == expected, (relative, is_dir)


@settings(max_examples=500, deadline=None)
@given(st.lists(PATTERNS, max_size=8), st.lists(st.sampled_from(NAMES), min_size=1, max_size=3))
def test_dropping_the_patterns_that_ignore_a_named_folder_keeps_the_rest(
    lines: list[str], parts: list[str]
) -> None:
    import pathspec

    chain = ["/".join(parts[: index + 1]) for index in range(len(parts))]
    spec = pathspec.GitIgnoreSpec.from_lines(lines)
    kept = [
        p for p in spec.patterns if not (p.include and any(p.match_file(folder + "/") for folder in chain))
    ]
    reference = pathspec.GitIgnoreSpec(kept)
    matcher = IgnoreFile(lines).without_matches_of(chain)
    for name in NAMES:
        for is_dir in (False, True):
            relative = f"{chain[-1]}/{name}"
            expected = reference.check_file(relative + "/" if is_dir else relative).include
            assert matcher.decide(relative, is_dir) == expected


def test_a_large_gitignore_of_literal_patterns_compiles_no_regex() -> None:
    """200,000 names and paths are dictionary entries, not 200,000 regexes (pathspec alone took
    35 s to read them; benchmarks/bench_gitignore.py has the figures)."""
    lines = [f"generated_{index}/" if index % 2 else f"/cache/file_{index}.bin" for index in range(200_000)]
    matcher = IgnoreFile(lines)
    assert matcher.globs is None and len(matcher.names) + len(matcher.paths) == 200_000
    assert matcher.decide("generated_7/x.py", False) is True and matcher.decide("src/x.py", False) is None
    assert matcher.decide("cache/file_8.bin", False) is True
    assert matcher.decide("a/cache/file_8.bin", False) is None


def test_a_pattern_git_matches_nothing_with_is_left_out_and_the_others_apply(tmp_path) -> None:  # type: ignore[no-untyped-def]
    """`output\\` (a Windows habit: a trailing backslash) stopped a whole run with pathspec's
    GitIgnorePatternError (Kahsolt/MindSpore-2024-AI-model-develop-challenge). git matches
    nothing with it and applies the other lines; so does the walk."""
    import subprocess

    from ms_migrate.files.sources import discover

    lines = ["output\\", "gen/*", "keep.py"]
    matcher = IgnoreFile(lines)
    assert matcher.decide("output", True) is None and matcher.decide("output/a.py", False) is None
    assert matcher.decide("gen/b.py", False) is True and matcher.decide("keep.py", False) is True
    subprocess.run(["git", "init", "-q", str(tmp_path)], check=True)
    (tmp_path / ".gitignore").write_text("\n".join(lines) + "\n", encoding="utf-8")
    for name in ("output/a.py", "gen/b.py", "keep.py", "c.py"):
        (tmp_path / name).parent.mkdir(exist_ok=True)
        (tmp_path / name).write_text("x = 1\n", encoding="utf-8")
    found = sorted(path.relative_to(tmp_path).as_posix() for path in discover([tmp_path]))
    ignored = subprocess.run(
        ["git", "-C", str(tmp_path), "check-ignore", "output/a.py", "gen/b.py", "keep.py", "c.py"],
        capture_output=True,
        text=True,
    ).stdout.split()
    assert found == ["c.py", "output/a.py"] and sorted(ignored) == ["gen/b.py", "keep.py"]
