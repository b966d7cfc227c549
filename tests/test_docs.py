from ms_migrate.docs import DOCS, GENERATED


def test_generated_docs_are_current() -> None:
    assert {"zh/rules.md", "zh/reasons.md", "zh/release-pairs.md"} <= set(GENERATED)
    for name, render in GENERATED.items():
        current = (DOCS / name).read_text(encoding="utf-8")
        assert current == render(), f"run python -m ms_migrate.docs ({name})"


def test_every_rule_reason_and_note_has_a_current_chinese_translation() -> None:
    """Each zh.json entry's source is the sha256 (12 hex digits) of the English it translates."""
    from ms_migrate.translations import problems

    found = problems()
    assert not found, (
        "update ms_migrate/translations/zh.json (translate the English again, set the source shown, "
        "then run python -m ms_migrate.docs):\n" + "\n".join(found)
    )


def test_a_changed_or_new_english_text_is_reported_by_its_code() -> None:
    import copy

    from ms_migrate.translations import english, problems, source_of, zh

    translations = copy.deepcopy(zh())
    translations["rules"]["MS101"]["source"] = "000000000000"
    del translations["reasons"]["MSR001"]
    translations["notes"]["MSN999"] = {"source": "000000000000", "text": "?"}
    found = "\n".join(problems(translations))
    assert "rules MS101: stale" in found
    assert source_of(english()["rules"]["MS101"]) in found
    assert "reasons MSR001: missing" in found
    assert "notes MSN999: left over" in found


def test_the_chinese_pages_keep_the_code_and_the_codes() -> None:
    """The translations travel inside the package, and a Chinese page shows each example as the
    English page does, under the same codes."""
    import re

    from ms_migrate.translations import zh

    assert set(zh()) == {"rules", "reasons", "notes", "pages"}
    for name in ("rules.md", "reasons.md", "release-pairs.md"):
        english = (DOCS / name).read_text(encoding="utf-8")
        chinese = (DOCS / "zh" / name).read_text(encoding="utf-8")
        fence = re.compile(r"^```python\n.*?^```$", re.MULTILINE | re.DOTALL)
        assert fence.findall(english) == fence.findall(chinese), name
        heading = re.compile(r"^## (MS[RN]?\d{3})", re.MULTILINE)
        assert heading.findall(english) == heading.findall(chinese), name
        assert chinese.splitlines()[2].startswith(f"[English](../{name}) · [README](../../README.zh-CN.md)")
        assert english.splitlines()[2].startswith(f"[中文](zh/{name})")


def test_rule_example_converts_as_documented() -> None:
    from ms_migrate.core.engine import migrate_text
    from ms_migrate.facts.versions import Version
    from ms_migrate.rules import ms101 as rule

    if True:
        header = "import mindspore\nimport mindspore.nn as nn\nfrom mindspore.ops import composite as C\n\n\n"
        after_header = "import mindspore\nimport mindspore.nn as nn\n\n\n"
        result = migrate_text(header + rule.BEFORE, Version(2, 10))
        assert result.text == after_header + rule.AFTER
