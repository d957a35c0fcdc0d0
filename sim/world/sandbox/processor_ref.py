"""Loading the code under test from a reference: ``package.module:function`` or
``path/to/file.py:function``.

The function must accept ``(job, accounts, cleanup_store, outbox)``, the interface of the
design documents. A reference that cannot be loaded is bad input (``ScenarioError``, exit 2),
never a verdict on the design.

Where a reference is looked for:

- a module reference imports as ``python -m`` would find it from the current folder: the
  current folder is added to ``sys.path`` (after what is there, so it never shadows an
  installed package), and so is a scenario's ``processor_path`` folder (a replay file records
  the folder its check ran in, so it replays from anywhere);
- a file reference in a scenario file is taken relative to that file's folder
  (``acksim.scenario.file_refs.anchor_refs``, called by ``acksim.scenario.load``); on the
  command line, relative to the current folder;
- the names from before the ``acksim.`` namespace (``model.processor:process``,
  ``model.candidates:naive``, ``sim....``) still load acksim's code for one release, with a
  one-line note on stderr, unless a ``model`` (``sim``) package of the user's own is found.
"""

from __future__ import annotations

import hashlib
import importlib
import importlib.util
import inspect
import sys
from pathlib import Path
from typing import Callable

from acksim.scenario import ScenarioError
from acksim.scenario.file_refs import is_file_ref

FORM = "package.module:function or path/to/file.py:function"


CLEANUP_PARAMS = ("job", "accounts", "cleanup_store", "outbox")


def load_processor(ref: str, field: str = "processor", params: tuple[str, ...] = CLEANUP_PARAMS,
                   path: str | None = None) -> Callable:
    """The processor named by ``ref``, imported with the current folder and ``path`` (a
    folder, e.g. a scenario's ``processor_path``) on ``sys.path``. Raises ``ScenarioError``
    (one line naming ``field``) when the reference is malformed, the module or file cannot be
    imported (its own error is quoted), the name is missing or not callable, or its
    signature cannot take the four arguments of the interface (``params``: the cleanup
    design's four by default). An old acksim name prints a deprecation note on stderr."""
    target, sep, name = ref.rpartition(":")
    if not sep or not target or not name.isidentifier():
        raise ScenarioError(f"{field}: expected {FORM}, got {ref!r}")
    if path is not None:
        _on_path(path)
    _on_path(str(Path.cwd()))
    if not is_file_ref(ref):
        target = _current_name(target, name)
    try:
        module = _import_file(target, field) if is_file_ref(ref) else importlib.import_module(target)
    except ScenarioError:
        raise
    except BaseException as exc:  # noqa: BLE001 - any import-time failure of user code is bad input
        if isinstance(exc, KeyboardInterrupt):
            raise
        raise ScenarioError(f"{field}: cannot import {target!r}: {type(exc).__name__}: {exc}".splitlines()[0]) from None
    fn = getattr(module, name, None)
    if fn is None:
        raise ScenarioError(f"{field}: {target!r} has no attribute {name!r}")
    check_processor(fn, ref, field, params)
    return fn


def canonical_ref(ref: str) -> str:
    """``ref`` as a replay file should record it: a file reference made absolute (from the
    current folder), an old acksim name replaced by its new one (with the note), else as is."""
    target, sep, name = ref.rpartition(":")
    if not sep:
        return ref
    if is_file_ref(ref):
        return f"{Path(target).resolve()}:{name}"
    _on_path(str(Path.cwd()))
    return f"{_current_name(target, name)}:{name}"


def processor_folder(ref: str) -> str | None:
    """The current folder, when the module reference ``ref`` is found there (the user's own
    package, imported from where the check runs): a replay file records it as
    ``processor_path``. None for a file reference, acksim's own code, or a module found
    elsewhere. Imports nothing."""
    if is_file_ref(ref):
        return None
    top = ref.rpartition(":")[0].split(".")[0]
    if top == "acksim":
        return None
    cwd = Path.cwd().resolve()
    _on_path(str(cwd))
    try:
        spec = importlib.util.find_spec(top)
    except (ImportError, ValueError):
        return None
    where = [spec.origin] if spec is not None and spec.origin not in (None, "namespace") else \
        list(getattr(spec, "submodule_search_locations", None) or [])
    for place in where:
        if Path(place).resolve().is_relative_to(cwd):
            return str(cwd)
    return None


_OLD_NAMES = {"model": "acksim.model", "sim": "acksim"}
_noted: set[str] = set()


def _current_name(target: str, name: str) -> str:
    """``target`` with an old acksim module name (``model.…``, ``sim.…``) replaced by its new
    one, unless the user has a ``model`` (``sim``) package of their own; prints the
    deprecation note once per name. Looks the package up without importing it."""
    top, dot, rest = target.partition(".")
    if top not in _OLD_NAMES or _own_package(top, rest):
        return target
    new = f"{_OLD_NAMES[top]}{dot}{rest}" if top == "model" else f"acksim.{rest}" if rest else "acksim"
    if target not in _noted:
        _noted.add(target)
        print(f"acksim: note: '{target}:{name}' is now '{new}:{name}'; the old name goes in the next release",
              file=sys.stderr)
    return new


def _own_package(top: str, rest: str) -> bool:
    """Whether an importable ``top`` package is the user's own (not acksim's folder)."""
    import acksim

    acksim_folder = Path(acksim.__file__).resolve().parent
    ours = Path(importlib.util.find_spec("acksim.model").origin).parent if top == "model" else acksim_folder
    try:
        spec = importlib.util.find_spec(top)
    except (ImportError, ValueError):
        return False
    if spec is None:
        return False
    if spec.origin not in (None, "namespace"):
        return Path(spec.origin).resolve().parent != ours.resolve()
    # a namespace package (a bare folder): the user's only if it holds the module named
    first = rest.split(".")[0]
    return any((Path(loc) / first).is_dir() or (Path(loc) / f"{first}.py").is_file()
               for loc in (spec.submodule_search_locations or ()) if first)


def _on_path(folder: str) -> None:
    """Append ``folder`` to ``sys.path`` unless it is there (or, for the current folder, ``''``)."""
    if folder in sys.path or (folder == str(Path.cwd()) and "" in sys.path):
        return
    sys.path.append(folder)
    importlib.invalidate_caches()


def check_processor(fn, name: str, field: str = "processor", params: tuple[str, ...] = CLEANUP_PARAMS) -> None:
    """Raise ``ScenarioError`` unless ``fn`` is a plain callable taking ``params`` (by
    default ``(job, accounts, cleanup_store, outbox)``): not callable, a generator or
    ``async`` function (which would return without running), or a signature that cannot bind."""
    if not callable(fn):
        raise ScenarioError(f"{field}: {name!r} is not callable")
    if inspect.isgeneratorfunction(fn) or inspect.iscoroutinefunction(fn) or inspect.isasyncgenfunction(fn):
        raise ScenarioError(f"{field}: {name!r} is a generator or async function; the processor is plain "
                            "synchronous code")
    try:
        inspect.signature(fn).bind(*[None] * len(params))
    except TypeError:
        raise ScenarioError(f"{field}: {name!r} must accept ({', '.join(params)})") from None
    except ValueError:
        pass  # no signature to inspect (a builtin): let the call decide


def reference_of(fn) -> str:
    """A reference that ``load_processor`` loads back: ``module:name`` for a module-level
    function of an importable module, else ``/absolute/path/file.py:name``. Raises
    ``ScenarioError`` for a callable no reference can name (a lambda, a local function)."""
    name = getattr(fn, "__qualname__", None) or getattr(getattr(fn, "func", None), "__qualname__", None)
    module = getattr(fn, "__module__", None) or getattr(getattr(fn, "func", None), "__module__", None)
    if not name or "<" in name or "." in name:
        raise ScenarioError(f"processor: {fn!r} has no name a replay file could load; use a module-level function")
    if module and module != "__main__" and not module.startswith("acksim_processor_"):
        return f"{module}:{name}"
    source = inspect.getsourcefile(fn)
    if not source:
        raise ScenarioError(f"processor: cannot locate the source file of {fn!r}")
    return f"{Path(source).resolve()}:{name}"


def _import_file(target: str, field: str = "processor"):
    path = Path(target)
    if not path.is_file():
        what = "is not a file" if path.exists() else "not found"
        raise ScenarioError(f"{field}: file {target!r} {what} (from {Path.cwd()})")
    if path.suffix != ".py":
        raise ScenarioError(f"{field}: file {target!r} is not a Python file (.py)")
    resolved = path.resolve()
    module_name = "acksim_processor_" + hashlib.sha256(str(resolved).encode()).hexdigest()[:12]
    if module_name in sys.modules:
        return sys.modules[module_name]
    spec = importlib.util.spec_from_file_location(module_name, resolved)
    module = importlib.util.module_from_spec(spec)
    sys.modules[module_name] = module
    try:
        spec.loader.exec_module(module)
    except BaseException:
        del sys.modules[module_name]
        raise
    return module
