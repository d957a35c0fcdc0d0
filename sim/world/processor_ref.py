"""Loading the code under test from a reference: ``package.module:function`` or
``path/to/file.py:function``.

The function must accept ``(job, accounts, cleanup_store, outbox)``, the interface of the
design documents. A reference that cannot be loaded is bad input (``ScenarioError``, exit 2),
never a verdict on the design.
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

FORM = "package.module:function or path/to/file.py:function"


CLEANUP_PARAMS = ("job", "accounts", "cleanup_store", "outbox")


def load_processor(ref: str, field: str = "processor", params: tuple[str, ...] = CLEANUP_PARAMS) -> Callable:
    """The processor named by ``ref``. Raises ``ScenarioError`` (one line naming ``field``)
    when the reference is malformed, the module or file cannot be imported (its own error is
    quoted), the name is missing or not callable, or its signature cannot take the four
    arguments of the interface (``params``: the cleanup design's four by default)."""
    target, sep, name = ref.rpartition(":")
    if not sep or not target or not name.isidentifier():
        raise ScenarioError(f"{field}: expected {FORM}, got {ref!r}")
    try:
        module = _import_file(target, field) if target.endswith(".py") or "/" in target else importlib.import_module(target)
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
