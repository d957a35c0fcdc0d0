"""What can go wrong starting or stopping a broker: every error is a ``BrokerError`` (a
RuntimeError), one line that says what to do where it can (which package to install)."""

class BrokerError(RuntimeError):
    """Base class of every error raised by ``acksim.live.brokers``."""


class BrokerNotInstalled(BrokerError):
    """A server binary or Python package is missing (message names the package)."""


class BrokerStartError(BrokerError):
    """The server exited early, the port was taken, or readiness timed out."""


class BrokerStopError(BrokerError):
    """A port was still accepting connections after the server was killed."""
