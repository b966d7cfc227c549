"""What every test shares: its own cache folder (``MS_MIGRATE_CACHE_DIR``, inherited by the
commands tests start), so that no test sees another's results and none writes
``.ms_migrate_cache/`` into a tree it compares, or into the checkout."""

from __future__ import annotations

import pytest

from ms_migrate.files.cache import DIRECTORY_VARIABLE


@pytest.fixture(autouse=True)
def _own_cache(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(DIRECTORY_VARIABLE, str(tmp_path_factory.mktemp("cache")))
