"""Shared fixtures of the core tests."""

from __future__ import annotations

import importlib
import os
import re
import subprocess
import sys

import pytest
from support import FIXTURE_PLUGIN


@pytest.fixture(scope="session", autouse=True)
def _compile_cache_base(tmp_path_factory):
    """The session's compile caches live here, never in the user's (TILECORE_CACHE_DIR points here
    for session- and module-scoped fixtures too, which run before a test's own fixtures)."""
    base = tmp_path_factory.mktemp("compile-cache")
    old = os.environ.get("TILECORE_CACHE_DIR")
    os.environ["TILECORE_CACHE_DIR"] = str(base / "shared")
    yield base
    if old is None:
        os.environ.pop("TILECORE_CACHE_DIR", None)
    else:
        os.environ["TILECORE_CACHE_DIR"] = old


@pytest.fixture(autouse=True)
def private_compile_cache(_compile_cache_base, request, monkeypatch):
    """Every test (and every `tilecore` it starts) gets an empty compile cache of its own: results
    never depend on what another test compiled."""
    name = re.sub(r"[^\w.-]+", "_", request.node.name)[:60]
    d = _compile_cache_base / f"{len(os.listdir(_compile_cache_base))}-{name}"
    d.mkdir()
    monkeypatch.setenv("TILECORE_CACHE_DIR", str(d))
    return str(d)


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

