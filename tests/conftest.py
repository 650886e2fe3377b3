"""Shared fixtures of the core tests."""

from __future__ import annotations

import importlib
import os
import subprocess
import sys

import pytest
from support import FIXTURE_PLUGIN


@pytest.fixture(scope="session", autouse=True)
def private_compile_cache(tmp_path_factory):
    """Every test (and every `tilecore` it starts) uses a compile cache of its own session, never the
    user's: TILECORE_CACHE_DIR points into the session's temporary folder. Tests of the cache itself
    set their own folder per test."""
    old = os.environ.get("TILECORE_CACHE_DIR")
    os.environ["TILECORE_CACHE_DIR"] = str(tmp_path_factory.mktemp("compile-cache"))
    yield os.environ["TILECORE_CACHE_DIR"]
    if old is None:
        os.environ.pop("TILECORE_CACHE_DIR", None)
    else:
        os.environ["TILECORE_CACHE_DIR"] = old


@pytest.fixture
def cache_dir(tmp_path, monkeypatch):
    """An empty compile cache for one test (TILECORE_CACHE_DIR; cache switches cleared)."""
    d = tmp_path / "cache"
    monkeypatch.setenv("TILECORE_CACHE_DIR", str(d))
    monkeypatch.delenv("TILECORE_NO_CACHE", raising=False)
    monkeypatch.delenv("TILECORE_CACHE_SIZE", raising=False)
    return d


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

