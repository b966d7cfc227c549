from ms_migrate.docs import DOCS, GENERATED


def test_generated_docs_are_current() -> None:
    for name, render in GENERATED.items():
        current = (DOCS / name).read_text(encoding="utf-8")
        assert current == render(), f"run python -m ms_migrate.docs ({name})"


def test_rule_example_converts_as_documented() -> None:
    from ms_migrate.engine import migrate_text
    from ms_migrate.rules import ms101 as rule
    from ms_migrate.versions import Version

    if True:
        header = "import mindspore\nimport mindspore.nn as nn\nfrom mindspore.ops import composite as C\n\n\n"
        after_header = "import mindspore\nimport mindspore.nn as nn\n\n\n"
        result = migrate_text(header + rule.BEFORE, Version(2, 10))
        assert result.text == after_header + rule.AFTER
