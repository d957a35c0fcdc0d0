"""A one-account scenario with exact timing, for world tests and properties."""


def tiny_dict(**sections):
    """A one-account scenario with exact timing: deadline at 100 s, constant 1 s store
    latency, zero ack and publish latency, no faults. ``sections`` update its tables."""
    data = {
        "name": "tiny",
        "seed": 1,
        "workload": {"accounts": 1, "deadline_start_s": 100, "deadline_window_s": 1,
                     "deadline_granularity_s": 1, "renew_fraction": 0, "extension_fraction": 0,
                     "resubscribe_fraction": 0, "delete_fraction": 0, "term_s": 100_000},
        "scheduler": {"publish_latency_s": 0},
        "queue": {"visibility_timeout_s": 60, "ack_latency_s": 0},
        "workers": {"count": 1, "restart_delay_s": 30},
        "stores": {"backend": "memory", "latency_mean_s": 1.0, "latency_distribution": "constant"},
        "mail": {"poll_interval_s": 5, "latency_s": 0},
        "run": {"max_time_s": 200_000},
    }
    for name, values in sections.items():
        if isinstance(values, dict):
            data.setdefault(name, {}).update(values)
        else:
            data[name] = values
    return data
