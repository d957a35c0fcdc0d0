"""The search for fault schedules that break a design: ``strategies`` (Hypothesis strategies
that draw small worlds and their faults), ``check`` (the search and its shrinking), ``design``
(the design options a check runs under), ``candidates`` (the bundled candidate designs),
``findings`` (what a finding is and how it reads, the check's verdict), ``replay`` (replay
files and whether a run reproduced one), ``selfcheck`` (a finding replayed in a fresh
process), ``api`` (``acksim.check``) and ``parallel`` (searches on several processes)."""
