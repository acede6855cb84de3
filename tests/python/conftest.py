"""pytest set-up for the Python package (ctest python_api; README "Python"): the module from the
build tree (FUSERT_PY_PATH, default <repo>/build/python), the repository's models and the ONNX
files make test fetches and exports (.cache/)."""
import os
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
BUILD = os.environ.get("FUSERT_BUILD", os.path.join(ROOT, "build"))
sys.path.insert(0, os.environ.get("FUSERT_PY_PATH", os.path.join(BUILD, "python")))


def cached(*parts):
    """A file under .cache/, or the test skips saying which make target makes it."""
    path = os.path.join(ROOT, ".cache", *parts)
    if not os.path.exists(path):
        pytest.skip(f"{path} is missing: make onnx-models (make test does) writes it")
    return path


@pytest.fixture(scope="session")
def root():
    return ROOT


@pytest.fixture(scope="session")
def infer_bin():
    path = os.path.join(BUILD, "infer")
    if not os.path.exists(path):
        pytest.skip(f"{path} is missing: build first (make build)")
    return path
