"""Shared fixtures of the core tests."""

from __future__ import annotations

import importlib
import subprocess
import sys

import pytest
from support import FIXTURE_PLUGIN


@pytest.fixture(scope="session")
def thirdparty_site(tmp_path_factory):
    """The third-party fixture plugin installed (really, with pip) into a private site dir.

    Returns the directory; put it on sys.path to make its entry point visible.
    """
    target = tmp_path_factory.mktemp("thirdparty-site")
    subprocess.run([sys.executable, "-m", "pip", "install", "-q", "--no-deps", "--no-build-isolation",
                    "--target", str(target), FIXTURE_PLUGIN], check=True)
    return str(target)


@pytest.fixture
def with_thirdparty(thirdparty_site, monkeypatch):
    """Make the installed third-party plugin discoverable through entry points for one test."""
    monkeypatch.syspath_prepend(thirdparty_site)
    importlib.invalidate_caches()
    yield thirdparty_site
    for mod in [m for m in sys.modules if m.startswith("tilecore_fixture_thirdparty")]:
        del sys.modules[mod]


@pytest.fixture
def clean_env(monkeypatch):
    """No plugin-selection variables from the caller's environment."""
    monkeypatch.delenv("TILECORE_DISABLE_PLUGIN_AUTOLOAD", raising=False)
    monkeypatch.delenv("TILECORE_DISABLED_PLUGINS", raising=False)
    return monkeypatch

