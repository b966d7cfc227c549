"""`upgrade --verify --install-requirements`: the packages a project's requirements.txt names,
installed with the runtime's pip (wheels only) into a cache folder the workers import from after
the runtime's own packages. The end-to-end test installs a real package from the package index."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from ms_migrate.verify.requirements import read_requirements, requirement_files
from tests.test_verify import STEP_WITH_STRAY_IMPORTS, invoke, table_rows

REQUIREMENTS = """\
# what the training scripts import
easydict
PyYAML >= 5.1, < 7  # the configs
-e git+https://example.invalid/tools.git#egg=tools
--index-url https://example.invalid/simple
./vendored/package
mindspore-gpu==1.10.1
numpy>=1.17
markers; python_version < "3.8"
sklearn>=0.24
"""


def test_only_plain_requirements_are_taken_and_the_runtime_keeps_its_own(tmp_path: Path) -> None:
    (tmp_path / "requirements.txt").write_text(REQUIREMENTS, encoding="utf-8")
    wanted = read_requirements([tmp_path / "requirements.txt"])
    assert wanted.specs == ("PyYAML>=5.1,<7", "easydict", "scikit-learn>=0.24")
    assert [line.rpartition(" (")[0] for line in wanted.refused] == [
        "-e git+https://example.invalid/tools.git#egg=tools",
        "--index-url https://example.invalid/simple",
        "./vendored/package",
        'markers; python_version < "3.8"',
    ]


def test_the_nearest_requirements_file_up_to_the_repository_root_is_read(tmp_path: Path) -> None:
    (tmp_path / "requirements.txt").write_text("above-the-repository\n", encoding="utf-8")
    repository = tmp_path / "repo"
    (repository / ".git").mkdir(parents=True)
    (repository / "requirements.txt").write_text("easydict\n", encoding="utf-8")
    (repository / "official" / "cv" / "net" / "src").mkdir(parents=True)
    (repository / "official" / "cv" / "net" / "requirements.txt").write_text("PyYAML\n", encoding="utf-8")
    (repository / "research").mkdir()
    found = requirement_files(
        [repository / "official" / "cv" / "net" / "src" / "model.py", repository / "research" / "train.py"]
    )
    assert found == [
        (repository / "official" / "cv" / "net" / "requirements.txt").resolve(),
        (repository / "requirements.txt").resolve(),
    ]


def test_install_requirements_without_verify_is_a_usage_error(tmp_path: Path) -> None:
    (tmp_path / "train.py").write_text("x = 1\n", encoding="utf-8")
    code, output = invoke("upgrade", "--install-requirements", str(tmp_path / "train.py"))
    assert code == 2 and "--install-requirements only applies with --verify" in output, output


@pytest.mark.mindspore
def test_a_package_the_script_uses_at_import_is_installed_when_asked_and_the_step_is_proven(
    tmp_path: Path,
) -> None:
    """The step's module builds its config with easydict at import: without the flag, it cannot
    run (a stand-in is refused for a use); with it, easydict is installed from the index, the run
    says so, and the step is proven in both modes. A requirement that does not exist is said and
    the run goes on."""
    (tmp_path / ".git").mkdir()
    source = STEP_WITH_STRAY_IMPORTS.format(used='CFG = edict({"lr": 0.1})\n').replace(
        "from easydict_nowhere import", "from easydict import"
    )
    source = source.replace("import pandas_nowhere as pd\n", "").replace(
        "from sklearn_nowhere.metrics import f1_score\n", ""
    )
    source = source.replace("return pd.DataFrame(values), f1_score", "return values")
    (tmp_path / "train.py").write_text(source, encoding="utf-8")
    (tmp_path / "requirements.txt").write_text(
        "easydict==0.0.0.1\nno-such-package-ms-migrate==9.9\n", encoding="utf-8"
    )
    options = ("upgrade", "--verify", "--dry-run", "--target-version", "2.10", "--no-cache")
    code, output = invoke(*options, str(tmp_path / "train.py"))
    assert code == 2 and "StandInUsed" in output, output
    report = tmp_path / "reach.json"
    code, output = invoke(
        *options, "--install-requirements", "--report", str(report), str(tmp_path / "train.py")
    )
    assert code == 1, output  # proven, and a dry run that would change a file
    assert "requirements.txt: installed for verify: easydict " in output, output
    assert "not as pinned: easydict==0.0.0.1 (ERROR: " in output and "the newest installed" in output, output
    assert "not installed: no-such-package-ms-migrate==9.9 (" in output, output
    rows = table_rows(output)
    assert rows[("TrainStep", "pynative")][3] == rows[("TrainStep", "graph")][3] == "equal", output
    assert json.loads(report.read_text(encoding="utf-8"))["files"][0]["verified"][0]["verdict"] == "equal"


def test_each_file_pair_imports_from_the_folder_of_its_own_requirements_and_no_other(tmp_path: Path) -> None:
    from ms_migrate.verify.requirements import installed_for
    from ms_migrate.verify.worker import _installed_first

    (tmp_path / ".git").mkdir()
    for project in ("gan", "bert"):
        (tmp_path / project).mkdir()
        (tmp_path / project / "requirements.txt").write_text("easydict\n", encoding="utf-8")
    made = (
        ("/rt/2.8/bin/python", str((tmp_path / "gan" / "requirements.txt").resolve()), ("/cache/gan",)),
        ("/rt/2.8/bin/python", str((tmp_path / "bert" / "requirements.txt").resolve()), ("/cache/bert",)),
        ("/rt/2.10/bin/python", str((tmp_path / "bert" / "requirements.txt").resolve()), ("/cache/b", "/c")),
    )
    assert installed_for(tmp_path / "gan" / "train.py", made) == {"/rt/2.8/bin/python": ["/cache/gan"]}
    assert installed_for(tmp_path / "bert" / "train.py", made) == {
        "/rt/2.8/bin/python": ["/cache/bert"],
        "/rt/2.10/bin/python": ["/cache/b", "/c"],
    }
    assert installed_for(tmp_path / "train.py", made) == {}
    import sys

    before = list(sys.path)
    try:
        _installed_first(["/cache/gan"])
        assert sys.path[-1] == "/cache/gan"
        _installed_first(["/cache/bert", "/c"])
        assert sys.path[-2:] == ["/cache/bert", "/c"] and "/cache/gan" not in sys.path
        _installed_first(None)
        assert "/cache/bert" not in sys.path
    finally:
        sys.path[:] = before


def test_a_package_a_helper_imports_that_no_requirements_file_names_is_found(tmp_path: Path) -> None:
    """The packages of the fixed list that a file, or a project module it imports, imports: a
    project module of the same name is the project's own, and a name off the list is never
    installed however it is imported."""
    from ms_migrate.verify.requirements import imported_packages, installed_for

    (tmp_path / ".git").mkdir()
    (tmp_path / "src").mkdir()
    (tmp_path / "src" / "__init__.py").write_text("", encoding="utf-8")
    (tmp_path / "src" / "config.py").write_text("import yaml\nimport left_pad_nowhere\n", encoding="utf-8")
    (tmp_path / "tqdm.py").write_text("def tqdm(x):\n    return x\n", encoding="utf-8")
    train = tmp_path / "train.py"
    train.write_text("import cv2.dnn\nfrom tqdm import tqdm\nfrom src.config import cfg\n", encoding="utf-8")
    assert imported_packages(train) == ("cv2", "yaml")
    # A notebook's code cells, its magics left out (maskrcnn.ipynb's `from easydict import ...`).
    cells = [
        {"cell_type": "markdown", "metadata": {}, "source": ["import pandas"]},
        {
            "cell_type": "code",
            "metadata": {},
            "outputs": [],
            "execution_count": None,
            "source": ["%matplotlib inline\n", "from easydict import EasyDict as edict\n"],
        },
    ]
    notebook = tmp_path / "train.ipynb"
    notebook.write_text(json.dumps({"cells": cells, "metadata": {}, "nbformat": 4, "nbformat_minor": 5}))
    assert imported_packages(notebook) == ("easydict",)
    (tmp_path / "requirements.txt").write_text("opencv-python\n", encoding="utf-8")
    made = (
        ("/rt/python", str((tmp_path / "requirements.txt").resolve()), ("/cache/opencv",)),
        ("/rt/python", str(train.resolve()), ("/cache/pyyaml",)),
        ("/rt/python", str((tmp_path / "other.py").resolve()), ("/cache/easydict",)),
    )
    assert installed_for(train, made) == {"/rt/python": ["/cache/opencv", "/cache/pyyaml"]}


@pytest.mark.mindspore
def test_a_package_imported_where_no_requirements_file_names_it_is_installed_and_said(tmp_path: Path) -> None:
    """A config helper imports easydict, and the project has no requirements.txt: with the flag
    the package is installed for that file alone, the run says what and why, and the step is
    proven in both modes."""
    (tmp_path / ".git").mkdir()
    (tmp_path / "config.py").write_text(
        'from easydict import EasyDict as edict\n\nCFG = edict({"lr": 0.1})\n', encoding="utf-8"
    )
    source = STEP_WITH_STRAY_IMPORTS.format(used="from config import CFG\nLR = CFG.lr\n")
    for stray in ("import pandas_nowhere as pd\n", "from easydict_nowhere import EasyDict as edict\n"):
        source = source.replace(stray, "")
    source = source.replace("from sklearn_nowhere.metrics import f1_score\n", "")
    source = source.replace("return pd.DataFrame(values), f1_score", "return values")
    (tmp_path / "train.py").write_text(source, encoding="utf-8")
    options = ("upgrade", "--verify", "--dry-run", "--target-version", "2.10", "--no-cache")
    code, output = invoke(*options, "--install-requirements", str(tmp_path / "train.py"))
    assert code == 1, output  # proven, and a dry run that would change a file
    assert "1 file(s) import what no requirements file names: installed for verify: easydict " in output
    rows = table_rows(output)
    assert rows[("TrainStep", "pynative")][3] == rows[("TrainStep", "graph")][3] == "equal", output
