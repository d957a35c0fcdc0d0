"""How a process image imports the code under test: a processor reference parsed
(``parse_ref``), a ``path/to/file.py`` reference loaded under a name of its own
(``file_module_name``), each user source file compiled once per process and reused by every
image (``_CachedSourceLoader``), and the names imported while an image is entered noted for it
(``_LazyImportRecorder``). ``ImageError``: a reference that cannot be loaded."""

from __future__ import annotations

import hashlib
import importlib.machinery
import importlib.util
import os
import sys
from pathlib import Path
from types import ModuleType
from typing import Any

from acksim.world.sandbox.user_modules import _is_user_path

FILE_MODULE_PREFIX = "acksim_processor_"


class ImageError(Exception):
    """A processor reference that cannot be loaded: malformed, file missing, the import raised
    (chained as ``__cause__``), or the name is absent. The message is one line."""


class _CachedSourceLoader(importlib.machinery.SourceFileLoader):
    """The standard source loader, with each file's code object compiled once per process and
    reused by every image (keyed by path, mtime and size, so an edited file is recompiled)."""

    _code: dict[tuple[str, int, int], Any] = {}

    def get_code(self, fullname: str):
        path = self.get_filename(fullname)
        st = os.stat(path)
        key = (path, st.st_mtime_ns, st.st_size)
        code = self._code.get(key)
        if code is None:
            code = self._code[key] = super().get_code(fullname)
        return code


class _CachedSourceFinder:
    """A meta path finder placed just before ``PathFinder``: it finds what ``PathFinder``
    finds, and gives user source files the caching loader (other files keep theirs)."""

    @classmethod
    def find_spec(cls, name: str, path: Any = None, target: Any = None):
        spec = importlib.machinery.PathFinder.find_spec(name, path, target)
        if (spec is not None and type(spec.loader) is importlib.machinery.SourceFileLoader
                and spec.origin and _is_user_path(spec.origin)):
            spec.loader = _CachedSourceLoader(spec.loader.name, spec.loader.path)
        return spec


class _LazyImportRecorder:
    """A meta path finder that finds nothing: it notes the names imported while an image is
    entered (imports that miss ``sys.modules``), so ``Image.exit`` can capture new user modules
    without scanning ``sys.modules`` at every switch."""

    active = None  # the acksim.world.sandbox.images.Image entered, if any

    @classmethod
    def find_spec(cls, name: str, path: Any = None, target: Any = None) -> None:
        image = cls.active
        if image is not None:
            image._lazy_names.append(name)
        return None

    @classmethod
    def install(cls) -> None:
        """Put the recorder first in ``sys.meta_path`` and the caching finder just before
        ``PathFinder`` (after finders such as pytest's assertion rewriter); idempotent."""
        finders = sys.meta_path
        if cls not in finders:
            finders.insert(0, cls)
        if _CachedSourceFinder not in finders:
            path_finder = importlib.machinery.PathFinder
            finders.insert(finders.index(path_finder) if path_finder in finders else len(finders),
                           _CachedSourceFinder)


def parse_ref(ref: str) -> tuple[str, str]:
    """Split ``package.module:function`` or ``path/to/file.py:function`` into (target, name).
    Raises ``ImageError`` when malformed."""
    target, sep, name = ref.rpartition(":")
    if not sep or not target or not name.isidentifier():
        raise ImageError(f"expected package.module:function or path/to/file.py:function, got {ref!r}")
    return target, name


def file_module_name(path: str | os.PathLike) -> str:
    """The module name a ``file.py`` reference is loaded under: the same for every image of one
    file (``acksim_processor_`` + 12 hex digits of the resolved path's SHA-256), as in
    ``acksim.world.sandbox.processor_ref``."""
    resolved = Path(path).resolve()
    return FILE_MODULE_PREFIX + hashlib.sha256(str(resolved).encode()).hexdigest()[:12]


def _exec_file(target: str, forced: set[str]) -> ModuleType:
    path = Path(target)
    if not path.is_file():
        raise ImageError(f"file {target!r} {'is not a file' if path.exists() else 'not found'} "
                         f"(from {Path.cwd()})")
    if path.suffix != ".py":
        raise ImageError(f"file {target!r} is not a Python file (.py)")
    name = file_module_name(path)
    forced.add(name)  # a file reference is fresh wherever the file lives
    resolved = str(path.resolve())
    spec = importlib.util.spec_from_file_location(name, resolved,
                                                  loader=_CachedSourceLoader(name, resolved))
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)  # on error the caller's cleanup drops the entry
    return module
