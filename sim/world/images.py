"""Per-worker process images: a fresh copy of the code under test for each simulated worker start.

In production every worker is its own process, so a processor's module-level state (a ``SEEN``
set, a cache dict, a counter, a connection pool) belongs to one worker and dies with it. In the
simulation every worker shares one interpreter; an ``Image`` restores the production picture.

An ``Image`` is built once per worker start (and again after each crash). It imports the
processor reference with every *user* module hidden from ``sys.modules``, so the processor's
module and every user module it imports at import time are executed afresh; it keeps the module
objects that import created and puts ``sys.modules`` back as it was. The image's functions
reach their own module globals directly, so most code needs nothing more. For code that looks
modules up at run time (``import mypkg.cache`` inside a function, ``from . import x``,
``importlib.import_module``, pickle), the harness brackets every switch into the worker's
greenlet with ``enter()`` / ``exit()``, which swap the image's modules into ``sys.modules`` and
out again. A user module first imported while the image is entered (a lazy import) is captured
into the image at ``exit()``.

Which modules are *user* modules (``is_user_module``): Python source files outside the standard
library and outside every site-packages / dist-packages directory, whose top-level package is
not in ``shared`` (``DEFAULT_SHARED``: acksim itself, simpy, greenlet, time_machine, pytest...).
Built-in, frozen and extension (.so/.pyd) modules are always shared: they cannot be executed
twice. Modules are shared across images by reference, so objects that cross between harness and
processor (jobs, store results, errors the harness must recognise) should be instances of shared
classes; put a user module that defines such classes in ``shared``.

Costs (CPython 3.11, a shared 2-CPU machine): building an image of a 2-module package takes
about 150 µs, of 10 modules about 500 µs (each file's code object is compiled once per process
and reused: ``_CachedSourceLoader``); ``enter`` + ``exit`` about 1.2 µs for a few modules.

A fresh submodule whose parent package is shared (a namespace package partly installed in
site-packages) is set as the parent's attribute only while its image is entered.

Limits: state outside the Python modules is not imaged: C extensions' globals, files on disk,
environment variables, threads the code starts (they keep running, unimaged, after a crash), and
registrations the user code makes in shared modules at import time (``logging`` handlers,
``atexit``, ``signal``, ``copyreg``, ``warnings`` filters), which accumulate once per image.
``sys.modules`` entries that code inserts by hand (not through an import) while entered are not
captured. Image code run while its image is not entered may import a second copy into
``sys.modules`` (pickle does): run it entered. A user module the harness imports after an
image was built is not hidden from that image. A ``path/to/file.py:function`` reference is
loaded as a top-level module: a relative import inside that file fails, and its directory is
not put on ``sys.path``, as in ``processor_ref``. Images are built and entered from one thread.
"""

from __future__ import annotations

import hashlib
import importlib
import importlib.machinery
import importlib.util
import os
import site
import sys
import sysconfig
from pathlib import Path
from types import FunctionType, ModuleType
from typing import Any, Callable, Iterable, Mapping

# acksim itself is shared, its bundled code under test included: ``acksim.model.processor`` and
# ``acksim.model.candidates`` hold no module state, so a copy per worker would change nothing
DEFAULT_SHARED = ("acksim", "simpy", "greenlet", "time_machine", "hypothesis", "pytest", "_pytest",
                  "pluggy", "__main__")
FILE_MODULE_PREFIX = "acksim_processor_"
_MISSING = object()
_EXTENSION_SUFFIXES = tuple(importlib.machinery.EXTENSION_SUFFIXES)


class ImageError(Exception):
    """A processor reference that cannot be loaded: malformed, file missing, the import raised
    (chained as ``__cause__``), or the name is absent. The message is one line."""


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

    active: "Image | None" = None

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


def _rebind(module: ModuleType, rebind_ids: Mapping[int, Any]) -> int:
    """Replace, in ``module``'s globals, in the defaults of its functions and in the attributes
    (and method defaults) of the classes it defines, every value whose identity is a key of
    ``rebind_ids``. Returns the number of replacements."""
    if not rebind_ids:
        return 0
    count = 0

    def fix_function(fn: FunctionType) -> int:
        n = 0
        if fn.__defaults__ and any(id(v) in rebind_ids for v in fn.__defaults__):
            fn.__defaults__ = tuple(rebind_ids.get(id(v), v) for v in fn.__defaults__)
            n += 1
        kw = fn.__kwdefaults__
        if kw:
            for k, v in kw.items():
                if id(v) in rebind_ids:
                    kw[k] = rebind_ids[id(v)]
                    n += 1
        return n

    namespace = module.__dict__
    for key, value in list(namespace.items()):
        if id(value) in rebind_ids:
            namespace[key] = rebind_ids[id(value)]
            count += 1
        elif isinstance(value, FunctionType) and value.__globals__ is namespace:
            count += fix_function(value)
        elif isinstance(value, type) and value.__module__ == module.__name__:
            for attr, member in list(vars(value).items()):
                if id(member) in rebind_ids:
                    setattr(value, attr, rebind_ids[id(member)])
                    count += 1
                else:
                    fn = getattr(member, "__func__", member)  # staticmethod / classmethod
                    if isinstance(fn, FunctionType):
                        count += fix_function(fn)
    return count


def _set_or_del(obj: Any, attr: str, value: Any) -> None:
    if value is _MISSING:
        obj.__dict__.pop(attr, None)
    else:
        setattr(obj, attr, value)


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
    ``acksim.world.processor_ref``."""
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


class Image:
    """One worker start's private copy of the code under test.

    ``Image(ref)`` imports ``ref`` (``package.module:function`` or ``path/to/file.py:function``)
    with all user modules hidden, keeps the fresh user modules in ``modules`` (name -> module)
    and leaves ``sys.modules`` as it found it. ``function`` is the image's own copy of the named
    callable. ``rebind`` maps objects to replacements to patch into the fresh modules (by
    identity: globals, function defaults, class attributes), e.g. ``vclock.EARLY_BOUND`` so that
    ``from time import sleep`` binds the virtual sleep. ``shared`` lists top-level packages (or
    dotted prefixes) never loaded afresh.

    ``enter()`` / ``exit()`` (or ``with image:``) bracket each switch into the worker's greenlet;
    only one image may be entered at a time, from the thread that builds images.

    Raises ``ImageError`` when the reference is malformed, its file is missing, its import
    raised (the original exception is ``__cause__``; ``KeyboardInterrupt`` propagates as is), or
    the name is missing.
    """

    def __init__(self, ref: str, *, shared: Iterable[str] = DEFAULT_SHARED,
                 rebind: Mapping[Any, Any] | None = None) -> None:
        self.ref = ref
        self.shared = tuple(shared)
        self._is_user = _Classifier.get(self.shared)
        self._rebind_ids = {id(k): v for k, v in (rebind or {}).items()}
        self._rebind_keep = list((rebind or {}).keys())  # the identities stay valid
        self.modules: dict[str, ModuleType] = {}
        self._hidden: tuple[str, ...] = ()  # user modules outside the image, hidden while entered
        self._saved: dict[str, ModuleType] | None = None  # what enter() displaced
        self._links: list[tuple[ModuleType, str, ModuleType]] = []  # see _shared_parent_links
        self._link_saved: list[tuple[ModuleType, str, Any]] = []
        self._lazy_names: list[str] = []
        _LazyImportRecorder.install()
        target, name = parse_ref(ref)
        module = self._load(target)
        fn = getattr(module, name, None)
        if fn is None:
            raise ImageError(f"{target!r} has no attribute {name!r}")
        self.module: ModuleType = module
        self.function: Callable = fn

    def _load(self, target: str) -> ModuleType:
        """Import ``target`` with the user modules hidden; keep what the import created.
        Not thread-safe: no other thread may import user code meanwhile (the global import
        lock is not held, since user code run at import time may wait on other threads)."""
        mods = sys.modules
        user = self._is_user
        outside = {n: m for n, m in list(mods.items()) if user(n, m)}
        for n in outside:
            del mods[n]
        before = set(mods)
        forced: set[str] = set()  # names loaded afresh whatever their classification
        try:
            if target.endswith(".py") or "/" in target or os.sep in target:
                module = _exec_file(target, forced)
            else:
                module = importlib.import_module(target)
        except (ImageError, KeyboardInterrupt):
            raise
        except BaseException as exc:  # noqa: BLE001 - any import-time failure of user code
            first = f"{type(exc).__name__}: {exc}".splitlines()[0] if str(exc) else type(exc).__name__
            raise ImageError(f"cannot import {target!r}: {first}") from exc
        finally:
            try:
                for n in [n for n in mods if n not in before]:
                    if n in forced or user(n, mods[n]):
                        self.modules[n] = mods.pop(n)
                # the import set each fresh submodule as an attribute of its parent package: a
                # shared parent gets its previous attribute back, and the image's while entered
                self._links = self._shared_parent_links(self.modules)
                for parent, child, _ in self._links:
                    _set_or_del(parent, child, outside.get(f"{parent.__name__}.{child}", _MISSING))
            finally:
                mods.update(outside)
        self._hidden = tuple(n for n in outside if n not in self.modules)
        for m in self.modules.values():
            _rebind(m, self._rebind_ids)
        return module

    def _shared_parent_links(self, names: Iterable[str]) -> list[tuple[ModuleType, str, ModuleType]]:
        """(shared parent package, attribute, image module) for each of ``names`` whose parent
        package is outside the image (a namespace package partly in site-packages, say)."""
        links = []
        for n in names:
            parent, _, child = n.rpartition(".")
            if parent and parent not in self.modules and isinstance(sys.modules.get(parent), ModuleType):
                links.append((sys.modules[parent], child, self.modules[n]))
        return links

    def enter(self) -> None:
        """Swap this image's modules into ``sys.modules`` (hiding user modules the harness holds
        outside any image). Cost: about 1 µs for a few modules. Raises ``RuntimeError`` when
        this or another image is already entered."""
        if _LazyImportRecorder.active is not None:
            raise RuntimeError("an image is already entered")
        mods = sys.modules
        own = self.modules
        displaced = {n: mods[n] for n in own.keys() & mods.keys()}  # usually empty
        for n in self._hidden:
            m = mods.pop(n, None)
            if m is not None:
                displaced[n] = m
        mods.update(own)
        if self._links:
            self._link_saved = [(p, c, getattr(p, c, _MISSING)) for p, c, _ in self._links]
            for parent, child, module in self._links:
                setattr(parent, child, module)
        self._saved = displaced
        _LazyImportRecorder.active = self

    def exit(self) -> None:
        """Swap the image's modules out, put back what ``enter`` displaced, and capture user
        modules first imported while entered. Raises ``RuntimeError`` when not entered."""
        displaced = self._saved
        if displaced is None or _LazyImportRecorder.active is not self:
            raise RuntimeError("image is not entered")
        _LazyImportRecorder.active = None
        self._saved = None
        mods = sys.modules
        if self._lazy_names:
            self._capture_lazy(mods)
        if self._links:
            for parent, child, old in self._link_saved:
                _set_or_del(parent, child, old)
            self._link_saved = []
        pop = mods.pop
        for n in self.modules:
            pop(n, None)
        if displaced:
            mods.update(displaced)

    def _capture_lazy(self, mods: dict) -> None:
        names, self._lazy_names = self._lazy_names, []
        captured = []
        for n in names:
            m = mods.get(n)
            if m is not None and n not in self.modules and self._is_user(n, m):
                self.modules[n] = m
                captured.append(n)
                _rebind(m, self._rebind_ids)
        for link in self._shared_parent_links(captured):
            self._links.append(link)
            self._link_saved.append((link[0], link[1], _MISSING))  # it was not imported before

    def __enter__(self) -> "Image":
        self.enter()
        return self

    def __exit__(self, *exc: Any) -> None:
        self.exit()

    def __repr__(self) -> str:
        return f"<Image {self.ref} modules={sorted(self.modules)}>"
