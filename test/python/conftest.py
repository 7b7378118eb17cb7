"""Shared fixtures. Hermetic caches: every test session compiles into its own disk cache and state
directory, so one test's kernels (or an earlier run's) never answer another test's compile. `rng`: a
fresh, unseeded generator per test (inputs are drawn anew on every run)."""

import numpy as np
import pytest


@pytest.fixture
def rng():
    return np.random.default_rng()


@pytest.fixture(autouse=True, scope="session")
def _private_kernel_cache(tmp_path_factory):
    patch = pytest.MonkeyPatch()
    patch.setenv("TILEMLIR_CACHE_DIR", str(tmp_path_factory.mktemp("tilemlir-cache")))
    patch.setenv("XDG_STATE_HOME", str(tmp_path_factory.mktemp("state")))  # native launcher records
    yield
    patch.undo()
