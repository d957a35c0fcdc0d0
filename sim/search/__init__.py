"""The search for fault schedules that break a design: ``strategies`` (Hypothesis strategies
that draw small worlds and their faults) and ``check`` (the search, shrinking, replay files
and the corpus)."""
