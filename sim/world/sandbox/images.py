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

Which modules are user modules is ``acksim.world.sandbox.user_modules``; how an image imports them
(processor references, the compiled-code cache, the lazy-import recorder) is
``acksim.world.sandbox.image_loading``.
"""

from __future__ import annotations

import importlib
import os
import sys
from types import FunctionType, ModuleType
from typing import Any, Callable, Iterable, Mapping

from acksim.world.sandbox.image_loading import ImageError, _exec_file, _LazyImportRecorder, parse_ref
from acksim.world.sandbox.user_modules import DEFAULT_SHARED, _Classifier

_MISSING = object()


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
