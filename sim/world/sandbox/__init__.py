"""The sandbox around the code under test: ``processor_ref`` (a ``module:function`` or
``file.py:function`` reference), ``code``, ``images``, ``user_modules`` and ``image_loading``
(one process image of the user's modules per worker start), ``vclock`` (the virtual clock the
code under test reads), ``interleave`` (the processor in a greenlet, switching back to the
harness at every store call), and ``contain`` and ``supervised`` (a world run in a child
process that a hostile processor cannot take the harness down from)."""
