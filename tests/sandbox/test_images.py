"""Per-worker process images: each image has its own copy of the user's modules."""

from __future__ import annotations

import json
import pickle
import os
import sys
import time

import greenlet
import pytest
import simpy

from acksim.world.sandbox import image_loading, images, user_modules
from acksim.world.sandbox import vclock
from acksim.world.sandbox.image_loading import ImageError
from acksim.world.sandbox.images import Image
from acksim.world.sandbox.user_modules import is_user_module

DEDUP = {
    "dedup/__init__.py": "",
    "dedup/processor.py": """
        SEEN = set()

        def process(job, *stores):
            if job in SEEN:
                return "skipped"
            SEEN.add(job)
            return "applied"
    """,
}


def test_two_images_have_independent_seen_sets(user_code):
    user_code(DEDUP)
    a, b = Image("dedup.processor:process"), Image("dedup.processor:process")
    assert a.function("job-1") == "applied"
    assert a.function("job-1") == "skipped"
    assert b.function("job-1") == "applied"  # worker b never saw job-1
    assert a.module is not b.module
    assert a.module.SEEN == {"job-1"} and b.module.SEEN == {"job-1"}
    assert a.module.SEEN is not b.module.SEEN
    assert "dedup" not in sys.modules and "dedup.processor" not in sys.modules


def test_image_rebuilt_after_a_crash_starts_empty(user_code):
    user_code(DEDUP)
    before_crash = Image("dedup.processor:process")
    assert before_crash.function("job-1") == "applied"
    del before_crash  # the worker crashed: its image is discarded
    after_restart = Image("dedup.processor:process")
    assert after_restart.module.SEEN == set()
    assert after_restart.function("job-1") == "applied"


def test_module_level_cache_dict_is_per_image(user_code):
    user_code({
        "cachey/__init__.py": "",
        "cachey/cache.py": """
            CACHE = {}
            LOADS = []

            def get(key):
                if key not in CACHE:
                    LOADS.append(key)
                    CACHE[key] = key.upper()
                return CACHE[key]
        """,
        "cachey/processor.py": """
            from cachey import cache

            def process(job, *stores):
                return cache.get(job)
        """,
    })
    a, b = Image("cachey.processor:process"), Image("cachey.processor:process")
    assert a.function("x") == "X" and a.function("x") == "X"
    assert a.modules["cachey.cache"].LOADS == ["x"]
    assert b.modules["cachey.cache"].LOADS == []
    assert b.function("x") == "X"
    assert b.modules["cachey.cache"].LOADS == ["x"]
    assert a.modules["cachey.cache"] is not b.modules["cachey.cache"]
    assert set(a.modules) == {"cachey", "cachey.cache", "cachey.processor"}


LAZY = {
    "lazy/__init__.py": "",
    "lazy/counter.py": """
        CALLS = []

        def bump(job):
            CALLS.append(job)
            return len(CALLS)
    """,
    "lazy/processor.py": """
        import importlib

        def process(job, *stores):
            import lazy.counter                    # absolute, at run time
            from . import counter                  # relative, at run time
            assert counter is lazy.counter
            assert importlib.import_module("lazy.counter") is counter
            return counter.bump(job)
    """,
}


def test_lazy_import_inside_a_function_sees_the_images_own_copy(user_code):
    user_code(LAZY)
    a, b = Image("lazy.processor:process"), Image("lazy.processor:process")
    assert "lazy.counter" not in a.modules  # not imported at import time
    with a:
        assert a.function("j1") == 1
        assert a.function("j2") == 2
    assert "lazy.counter" in a.modules  # captured at exit
    assert "lazy.counter" not in sys.modules and "lazy" not in sys.modules
    with b:
        assert b.function("j1") == 1  # b's own counter, not a's
    with a:
        assert a.function("j3") == 3  # a's copy survived b's turn
    assert a.modules["lazy.counter"].CALLS == ["j1", "j2", "j3"]
    assert b.modules["lazy.counter"].CALLS == ["j1"]


def test_lazy_sibling_imported_at_import_time_by_one_module_is_swapped_in(user_code):
    """The processor imports its sibling lazily; the sibling exists in the image already
    (imported at import time by the package), so the swap alone makes the lookup right."""
    files = dict(LAZY)
    files["lazy/__init__.py"] = "from . import counter\n"
    user_code(files)
    a, b = Image("lazy.processor:process"), Image("lazy.processor:process")
    assert "lazy.counter" in a.modules
    with a:
        a.function("j1")
    with b:
        assert b.function("j1") == 1
    assert a.modules["lazy.counter"].CALLS == ["j1"]


def test_stdlib_and_third_party_modules_are_shared(user_code):
    user_code({
        "uses_libs.py": """
            import json
            import simpy
            import greenlet
            import collections.abc

            def process(job, *stores):
                return json.dumps(job)
        """,
    })
    a, b = Image("uses_libs:process"), Image("uses_libs:process")
    assert set(a.modules) == {"uses_libs"}
    assert a.module.json is json is b.module.json
    assert a.module.simpy is simpy is b.module.simpy
    assert a.module.greenlet is greenlet is b.module.greenlet
    assert sys.modules["json"] is json and sys.modules["simpy"] is simpy
    assert a.function([1]) == "[1]"


def test_a_package_with_relative_imports(user_code):
    user_code({
        "relpkg/__init__.py": """
            from .core import process
            from . import settings
        """,
        "relpkg/settings.py": "RETRIES = [3]\n",
        "relpkg/core.py": """
            from .settings import RETRIES
            from .util.keys import key_of
            from . import settings

            def process(job, *stores):
                from .util import late          # relative import at run time
                RETRIES[0] -= 1
                return key_of(job), RETRIES[0], late.WHO, settings.RETRIES is RETRIES
        """,
        "relpkg/util/__init__.py": "",
        "relpkg/util/keys.py": """
            from ..settings import RETRIES

            def key_of(job):
                return f"k:{job}:{RETRIES[0]}"
        """,
        "relpkg/util/late.py": "WHO = object()\n",
    })
    a, b = Image("relpkg:process"), Image("relpkg:process")
    assert set(a.modules) == {"relpkg", "relpkg.core", "relpkg.settings", "relpkg.util",
                              "relpkg.util.keys"}
    with a:
        key, left, who_a, same = a.function("j")
    assert (key, left, same) == ("k:j:2", 2, True)
    with b:
        key, left, who_b, _ = b.function("j")
    assert (key, left) == ("k:j:2", 2)  # b's RETRIES was untouched by a
    assert who_a is not who_b  # each image loaded its own relpkg.util.late
    assert a.modules["relpkg.util"].late is a.modules["relpkg.util.late"]
    assert not any(n == "relpkg" or n.startswith("relpkg.") for n in sys.modules)


def test_file_reference_is_loaded_afresh_per_image(user_code):
    root = user_code({
        "scripts/handler.py": """
            import json
            SEEN = set()

            def process(job, *stores):
                new = job not in SEEN
                SEEN.add(job)
                return new
        """,
    })
    path = root / "scripts" / "handler.py"
    a, b = Image(f"{path}:process"), Image(f"{path}:process")
    name = image_loading.file_module_name(path)
    assert name.startswith("acksim_processor_") and a.module.__name__ == name
    assert set(a.modules) == {name}
    assert a.function("j") is True and a.function("j") is False
    assert b.function("j") is True
    assert name not in sys.modules
    with a:
        assert sys.modules[name] is a.module
    assert name not in sys.modules


def test_relative_path_file_reference(user_code, monkeypatch):
    root = user_code({"handler2.py": "def process(job, *stores):\n    return 'ok'\n"})
    monkeypatch.chdir(root)
    assert Image("./handler2.py:process").function(1) == "ok"


def test_harness_copy_of_a_user_module_is_hidden_and_restored(user_code):
    user_code(DEDUP)
    import dedup.processor as harness_copy  # the harness imported the user's code itself
    try:
        harness_copy.SEEN.add("job-1")
        img = Image("dedup.processor:process")
        assert img.module is not harness_copy and img.module.SEEN == set()
        assert sys.modules["dedup.processor"] is harness_copy  # put back after the load
        with img:
            assert sys.modules["dedup.processor"] is img.module
        assert sys.modules["dedup.processor"] is harness_copy
        assert sys.modules["dedup"].processor is harness_copy  # the parent's attribute too
    finally:
        del sys.modules["dedup.processor"], sys.modules["dedup"]


def test_modules_listed_as_shared_are_not_reloaded(user_code):
    user_code({
        "team/__init__.py": "",
        "team/types.py": "class Job:\n    pass\n",
        "team/processor.py": """
            from team.types import Job

            def process(job, *stores):
                return isinstance(job, Job)
        """,
    })
    import team.types
    try:
        shared = user_modules.DEFAULT_SHARED + ("team.types",)
        img = Image("team.processor:process", shared=shared)
        assert "team.types" not in img.modules and "team.processor" in img.modules
        assert img.function(team.types.Job()) is True  # one Job class on both sides
        fresh = Image("team.processor:process")  # default: team.types reloaded, a new class
        assert fresh.function(team.types.Job()) is False
    finally:
        for n in ("team.types", "team"):
            sys.modules.pop(n, None)


def test_classification():
    assert not is_user_module("json", json)
    assert not is_user_module("os", os)
    assert not is_user_module("sys", sys)  # built-in
    assert not is_user_module("time", time)
    assert not is_user_module("simpy", simpy)  # site-packages
    assert not is_user_module("greenlet._greenlet", sys.modules["greenlet._greenlet"])  # extension
    assert not is_user_module("_json", sys.modules.get("_json") or __import__("_json"))
    assert not is_user_module("acksim.world.sandbox.images", images)  # in the shared list
    assert not is_user_module("x", "not a module")
    assert is_user_module("tests.test_images", sys.modules[__name__])
    assert not is_user_module("tests.test_images", sys.modules[__name__], shared=("tests",))


def test_namespace_package_is_user_code(user_code):
    user_code({"nspkg/mod.py": "STATE = []\n\ndef process(job, *stores):\n    STATE.append(job)\n"})
    a, b = Image("nspkg.mod:process"), Image("nspkg.mod:process")
    assert set(a.modules) == {"nspkg", "nspkg.mod"}
    a.function(1)
    assert b.module.STATE == []


def test_rebind_replaces_early_bound_time_functions(user_code):
    user_code({
        "sleepy.py": """
            import time
            from time import sleep, monotonic as now
            from time import perf_counter

            def backoff(delay, sleep=time.sleep):
                sleep(delay)

            class Poller:
                clock = time.monotonic

                def wait(self, s, *, nap=time.sleep):
                    nap(s)

            def process(job, *stores):
                pass
        """,
    })
    img = Image("sleepy:process", rebind=vclock.EARLY_BOUND)
    m = img.module
    assert m.sleep is vclock.virtual_sleep and m.now is vclock.virtual_monotonic
    assert m.perf_counter is vclock.virtual_perf_counter
    assert m.backoff.__defaults__ == (vclock.virtual_sleep,)
    assert m.Poller.clock is vclock.virtual_monotonic
    assert m.Poller.wait.__kwdefaults__ == {"nap": vclock.virtual_sleep}
    assert m.time is time and time.sleep is vclock.real_sleep  # the shared module is untouched
    plain = Image("sleepy:process")
    assert plain.module.sleep is time.sleep


def test_import_failure_is_an_image_error_and_leaves_no_trace(user_code):
    user_code({
        "broken/__init__.py": "",
        "broken/helper.py": "VALUE = 1\n",
        "broken/processor.py": "from broken import helper\nraise RuntimeError('boom at import')\n",
    })
    with pytest.raises(ImageError, match="cannot import 'broken.processor': RuntimeError: boom") as info:
        Image("broken.processor:process")
    assert isinstance(info.value.__cause__, RuntimeError)
    assert not any(n == "broken" or n.startswith("broken.") for n in sys.modules)


@pytest.mark.parametrize("ref, message", [
    ("no_colon", "expected package.module:function"),
    ("mod:not-an-identifier", "expected package.module:function"),
    ("/nowhere/x.py:process", "not found"),
    ("surely_missing_module_xyz:process", "ModuleNotFoundError"),
])
def test_bad_references(ref, message):
    with pytest.raises(ImageError, match=message):
        Image(ref)


def test_missing_name(user_code):
    user_code({"noname.py": "X = 1\n"})
    with pytest.raises(ImageError, match="has no attribute 'process'"):
        Image("noname:process")


def test_enter_and_exit_misuse(user_code):
    user_code(DEDUP)
    a, b = Image("dedup.processor:process"), Image("dedup.processor:process")
    with pytest.raises(RuntimeError, match="not entered"):
        a.exit()
    a.enter()
    try:
        with pytest.raises(RuntimeError, match="already entered"):
            b.enter()
    finally:
        a.exit()
    assert "dedup.processor" not in sys.modules


def test_edited_source_is_recompiled(user_code):
    root = user_code({"editable.py": "def process(job, *stores):\n    return 1\n"})
    assert Image("editable:process").function(None) == 1
    path = root / "editable.py"
    path.write_text("def process(job, *stores):\n    return 22\n")  # new size
    os.utime(path, ns=(time.time_ns(), time.time_ns() + 10**9))
    assert Image("editable:process").function(None) == 22


def test_image_greenlet_switching_keeps_modules_apart(user_code):
    """Two workers' attempts interleaved in greenlets, each switch bracketed by its image."""
    user_code(LAZY)
    imgs = [Image("lazy.processor:process") for _ in range(2)]
    parent = greenlet.getcurrent()

    def body(img, job):
        img.function(job)
        parent.switch("paused")  # a store call: back to the harness
        return img.function(job + "'")

    gs = [greenlet.greenlet(lambda i=i: body(imgs[i], f"j{i}")) for i in range(2)]
    for _ in range(2):
        for img, g in zip(imgs, gs):
            with img:
                g.switch()
    assert [img.modules["lazy.counter"].CALLS for img in imgs] == [["j0", "j0'"], ["j1", "j1'"]]


def test_runtime_lookups_by_module_name_need_the_image_entered(user_code):
    """pickle (and typing.get_type_hints, dataclass machinery...) find classes through
    ``sys.modules[cls.__module__]``: they work on the image's classes while it is entered."""
    user_code({
        "records.py": """
            from __future__ import annotations
            import pickle
            import typing
            from dataclasses import dataclass

            @dataclass(frozen=True)
            class Receipt:
                job: str
                n: int

            def process(job, *stores):
                r = pickle.loads(pickle.dumps(Receipt(job, 1)))
                return type(r) is Receipt, typing.get_type_hints(Receipt)["n"] is int
        """,
    })
    img = Image("records:process")
    with img:
        assert img.function("j") == (True, True)
    assert "records" not in sys.modules
    # Not entered: pickle imports 'records' anew into sys.modules (a third copy, the harness's)
    # and finds a different Receipt class there. Code of an image must run entered.
    with pytest.raises(pickle.PicklingError, match="not the same object"):
        img.function("j")
    assert sys.modules.pop("records") is not img.module


def test_namespace_package_spanning_site_packages_and_user_code(user_code, tmp_path, monkeypatch):
    """``nsco`` is a namespace package with a library part (under a site-packages directory)
    and a user part: the library part and the package are shared, the user part is fresh."""
    lib = tmp_path / "venv" / "site-packages"
    (lib / "nsco" / "lib").mkdir(parents=True)
    (lib / "nsco" / "lib" / "__init__.py").write_text("REGISTRY = []\n")
    monkeypatch.syspath_prepend(str(lib))
    user_code({"nsco/worker.py": """
        from nsco.lib import REGISTRY
        SEEN = set()

        def process(job, *stores):
            SEEN.add(job)
            REGISTRY.append(job)
            import nsco.later                  # lazy, under the shared namespace package
            return nsco.later.TOKEN
    """, "nsco/later.py": "TOKEN = object()\n"})
    try:
        a, b = Image("nsco.worker:process"), Image("nsco.worker:process")
        assert set(a.modules) == {"nsco.worker"}
        with a:
            token_a = a.function("j")
        assert b.module.SEEN == set() and b.module.REGISTRY == ["j"]  # one library, two images
        ns = sys.modules["nsco"]
        assert "worker" not in vars(ns) and "later" not in vars(ns)  # no image's module kept
        assert "nsco.later" in a.modules and "nsco.later" not in sys.modules
        with b:
            assert b.function("j") is not token_a
        with a:
            import nsco.worker
            assert nsco.worker is a.module
            assert a.function("j") is token_a
    finally:
        for n in ("nsco.lib", "nsco"):
            sys.modules.pop(n, None)
