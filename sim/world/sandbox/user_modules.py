"""Which modules are user code, loaded afresh in every process image, and which are shared.

A user module is Python source outside the standard library and outside every site-packages /
dist-packages directory, whose top-level package is not in ``shared`` (``DEFAULT_SHARED``:
acksim itself, simpy, greenlet, time_machine, pytest...). Built-in, frozen and extension
(.so/.pyd) modules are always shared: they cannot be executed twice. Verdicts per file path, and
per (name, module) for one ``shared`` list, are remembered for the process.
"""

from __future__ import annotations

import importlib.machinery
import os
import site
import sys
import sysconfig
from types import ModuleType
from typing import Any, Iterable

# acksim itself is shared, its bundled code under test included: ``acksim.model.processor`` and
# ``acksim.model.candidates`` hold no module state, so a copy per worker would change nothing
DEFAULT_SHARED = ("acksim", "simpy", "greenlet", "time_machine", "hypothesis", "pytest", "_pytest",
                  "pluggy", "__main__")
_EXTENSION_SUFFIXES = tuple(importlib.machinery.EXTENSION_SUFFIXES)


def _library_dirs() -> tuple[str, ...]:
    """Directories whose modules are never user code: the standard library and every
    site-packages of this interpreter, its venv base and the user site (real paths, ending in
    ``os.sep``)."""
    dirs: set[str] = set()
    for scheme_vars in (None, {"base": sys.base_prefix, "platbase": sys.base_exec_prefix}):
        for key in ("stdlib", "platstdlib", "purelib", "platlib"):
            try:
                dirs.add(sysconfig.get_path(key, vars=scheme_vars))
            except KeyError:
                pass
    try:
        dirs.update(site.getsitepackages())
    except AttributeError:  # some embedded / old virtualenv site modules lack it
        pass
    user_site = getattr(site, "getusersitepackages", lambda: None)()
    if user_site:
        dirs.add(user_site)
    return tuple(sorted({os.path.join(os.path.realpath(d), "") for d in dirs if d}))


LIBRARY_DIRS = _library_dirs()
_PATH_VERDICTS: dict[str, bool] = {}  # realpath work per file is done once per process


def _is_user_path(path: str) -> bool:
    verdict = _PATH_VERDICTS.get(path)
    if verdict is None:
        real = os.path.realpath(path)
        parts = real.split(os.sep)
        verdict = (not real.endswith(_EXTENSION_SUFFIXES)
                   and not real.startswith(LIBRARY_DIRS)
                   and "site-packages" not in parts and "dist-packages" not in parts)
        _PATH_VERDICTS[path] = verdict
    return verdict


def _is_shared_name(name: str, shared: Iterable[str]) -> bool:
    return any(name == s or name.startswith(s + ".") for s in shared)


def is_user_module(name: str, module: Any, shared: Iterable[str] = DEFAULT_SHARED) -> bool:
    """Whether ``module`` (named ``name`` in ``sys.modules``) is user code, loaded afresh per
    image: Python source outside the standard library and site-/dist-packages, not built-in,
    frozen or an extension, and not under a package named in ``shared``. A namespace package
    (no ``__init__.py``) is user code when all its directories are. Never raises."""
    if not isinstance(module, ModuleType) or _is_shared_name(name, shared):
        return False
    file = getattr(module, "__file__", None)
    if isinstance(file, str):
        return _is_user_path(file)
    spec = getattr(module, "__spec__", None)
    locations = getattr(spec, "submodule_search_locations", None) if spec is not None else None
    if file is None and locations is not None and getattr(spec, "origin", None) in (None, "namespace"):
        paths = list(locations)
        return bool(paths) and all(_is_user_path(os.path.join(p, "")) for p in paths)
    return False  # built-in, frozen, or made by hand without a file


class _Classifier:
    """``is_user_module`` for one ``shared`` list, remembered per (name, module object): a scan
    of ``sys.modules`` then costs a dictionary look-up per module."""

    _by_shared: dict[tuple[str, ...], "_Classifier"] = {}

    def __init__(self, shared: tuple[str, ...]) -> None:
        self.shared = shared
        self._seen: dict[str, tuple[Any, bool]] = {}

    @classmethod
    def get(cls, shared: tuple[str, ...]) -> "_Classifier":
        found = cls._by_shared.get(shared)
        if found is None:
            found = cls._by_shared[shared] = cls(shared)
        return found

    def __call__(self, name: str, module: Any) -> bool:
        seen = self._seen.get(name)
        if seen is not None and seen[0] is module:
            return seen[1]
        verdict = is_user_module(name, module, self.shared)
        if isinstance(module, ModuleType) and not verdict:
            self._seen[name] = (module, verdict)  # user modules come and go: not remembered
        return verdict
