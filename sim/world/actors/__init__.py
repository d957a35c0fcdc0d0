"""The actors of the cleanup world, each a SimPy process given the ports it uses: the
``scheduler`` (with ``publish_records``), the ``worker`` (a driver of ``acksim.world.attempt``),
the players' ``renewals``, the ``outbox_relay`` and the ``time_limits`` of running attempts."""
