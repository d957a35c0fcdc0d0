"""The at-least-once queue (``core.Queue``: publish, receive, ack, nack, the dead-letter queue)
and its mechanisms, one module each: ``message``, ``leases`` (visibility timeouts, heartbeats,
sweeps), ``delivery_limit``, ``recovery``, ``consumer_timeout``, ``prefetch``, ``tombstones``,
``retention``, ``length_cap``, ``fifo_dedup``, ``waiting_line`` and ``broker`` (broker
restarts). A mechanism uses the queue through the interface ``core.Queue`` documents for it."""
