"""The code under test as each simulated worker process sees it.

In production every worker is a process of its own: it imports the processor's module when it
starts, and whatever that module keeps at module level (a ``SEEN`` set, an account cache, a
counter) belongs to that process and dies with it. ``CodeUnderTest`` gives each worker start
the same: ``start()`` returns a fresh ``acksim.world.sandbox.images.Image`` of the user's modules (the
processor's module and every user module it imports; not the standard library, installed
packages or acksim) for a processor named by a *reference*. A worker calls it when it starts
and again after each crash, kill or deployment.

Shared, not imaged: a processor handed over as a Python callable (the caller chose that very
object; pass its reference, e.g. ``"mypkg.proc:process"``, for a copy per worker), and acksim's
own code under test (``acksim.model.processor``, ``acksim.model.candidates``, the fan-out
design's ``acksim.model.shipment``), which keeps no module state.
"""

from __future__ import annotations

import sys
from typing import Callable

from acksim.scenario import ScenarioError
from acksim.world.sandbox.image_loading import ImageError
from acksim.world.sandbox.images import Image
from acksim.world.sandbox.processor_ref import CLEANUP_PARAMS, canonical_ref, load_processor
from acksim.world.sandbox.user_modules import is_user_module
from acksim.world.sandbox.vclock import EARLY_BOUND


class CodeUnderTest:
    """The processor of one world: ``processor`` is a callable (run as given, shared by every
    worker) or a reference (``package.module:function`` / ``path/to/file.py:function``),
    loaded once here to validate it (``ScenarioError`` naming ``field`` otherwise; ``params``
    and ``path`` as in ``load_processor``) and then imaged afresh at every ``start()`` when it
    is user code.

    ``function`` is the validated callable (the harness's copy); ``ref`` the canonical
    reference that images are built from, or None when the code is shared; ``images`` counts
    the images built."""

    def __init__(self, processor: Callable | str, field: str = "processor",
                 params: tuple[str, ...] = CLEANUP_PARAMS, path: str | None = None) -> None:
        self.ref: str | None = None
        self.images = 0
        if not isinstance(processor, str):
            self.function = processor
            return
        self.function = load_processor(processor, field, params, path)
        module_name = getattr(self.function, "__module__", None)
        module = sys.modules.get(module_name) if module_name else None
        if module is not None and is_user_module(module_name, module):
            self.ref = canonical_ref(processor)

    @property
    def imaged(self) -> bool:
        """Whether each worker start gets a fresh copy of the code."""
        return self.ref is not None

    def start(self) -> tuple[Callable, Image | None]:
        """A worker process starts: (the processor to call, its image or None when shared).
        About 150 µs for a processor of a module or two. Raises ``ScenarioError`` when the code
        no longer imports (it did when validated: an import-time failure that comes and goes)."""
        if self.ref is None:
            return self.function, None
        try:
            image = Image(self.ref, rebind=EARLY_BOUND)
        except ImageError as exc:
            raise ScenarioError(f"processor: a worker start could not import it again: {exc}") from None
        self.images += 1
        return image.function, image
