"""tilecore.entry_points: entry points and versions read from metadata folders, as importlib.metadata sees them."""

import importlib.metadata
import subprocess
import sys

from tilecore.entry_points import distributions, entry_points, version


def _ours(group):
    return sorted((e.name, e.value, e.dist.name, e.dist.version) for e in entry_points(group))


def _reference(group):
    return sorted((e.name, e.value, e.dist.name, e.dist.version) for e in importlib.metadata.entry_points(group=group))


def test_same_entry_points_and_versions_as_importlib_metadata():
    for group in ("tilecore.plugins", "console_scripts", "pytest11"):
        assert _ours(group) == _reference(group), group
    assert version("tilecore") == importlib.metadata.version("tilecore")
    assert version("no-such-distribution") == ""


def _write_dist(root, folder, name, ver, entry_points_txt):
    d = root / folder
    d.mkdir()
    (d / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {name}\nVersion: {ver}\n\nbody: ignored\n")
    (d / "entry_points.txt").write_text(entry_points_txt)


def test_first_distribution_on_the_path_wins_and_the_format_is_parsed(tmp_path, monkeypatch):
    first, second = tmp_path / "a", tmp_path / "b"
    first.mkdir()
    second.mkdir()
    _write_dist(first, "my_plug-1.0.dist-info", "My.Plug", "1.0",
                "# comment\n[tilecore.plugins]\nmine = my_plug.hooks:register [extra]\n\n[other]\nx = y\n")
    _write_dist(second, "my_plug-2.0.dist-info", "my-plug", "2.0", "[tilecore.plugins]\nmine = old.module\n")
    monkeypatch.setattr(sys, "path", [str(first), str(tmp_path / "missing"), str(second)])
    (ep,) = entry_points("tilecore.plugins")
    assert (ep.name, ep.value, ep.dist.name, ep.dist.version) == ("mine", "my_plug.hooks:register", "My.Plug", "1.0")
    assert version("my-plug") == "1.0" and len(distributions()) == 1


def test_compile_does_not_import_importlib_metadata():
    # whichever plugins this environment has (tox runs the core tests with each plugin alone)
    code = ("import sys; from tilecore.plugins import get_plugin_manager; pm = get_plugin_manager(); "
            "assert all(i.version for i in pm.plugins.values()), pm.plugins; "
            "print('importlib.metadata' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"
