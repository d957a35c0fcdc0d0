"""What vclock relies on in time-machine (verified on 3.6.0); an upgrade that changes one fails
here first."""

from __future__ import annotations

import datetime as dt
import threading
import time
import uuid
from datetime import datetime, timezone
from time import sleep as early_sleep
from time import time as early_time

import pytest
import time_machine
from time_machine import escape_hatch

UTC = timezone.utc


def test_frozen_travel_patches_early_bound_names_and_the_datetime_classes():
    with time_machine.travel(1_000_000_000, tick=False):
        assert early_time() == time.time() == 1_000_000_000.0
        assert time.time_ns() == 1_000_000_000 * 10**9
        assert datetime.now(UTC) == datetime(2001, 9, 9, 1, 46, 40, tzinfo=UTC)
        assert datetime.utcnow() == datetime(2001, 9, 9, 1, 46, 40)
        assert dt.date.today() == datetime.fromtimestamp(1_000_000_000).date()  # local zone
        assert time.clock_gettime(time.CLOCK_REALTIME) == 1_000_000_000.0
        assert time.gmtime().tm_year == 2001
        assert time.time() == 1_000_000_000.0  # tick=False: frozen


def test_int_is_seconds_float_is_rounded_to_the_ns_and_shift_is_exact():
    with time_machine.travel(1_700_000_000, tick=False) as traveller:
        traveller.shift(2)  # an int: whole seconds
        assert time.time_ns() == 1_700_000_002 * 10**9
        traveller.shift(0.123456789)  # a float: round(delta * 1e9) ns
        assert time.time_ns() == 1_700_000_002_123_456_789
        traveller.move_to(1_700_000_000.123456789)  # a float destination: 2**-22 s resolution
        assert time.time_ns() != 1_700_000_000_123_456_789
        assert abs(time.time_ns() - 1_700_000_000_123_456_789) < 1_000


def test_monotonic_perf_counter_and_sleep_are_not_patched():
    real_sleep, real_mono, real_perf = time.sleep, time.monotonic, time.perf_counter
    with time_machine.travel(0, tick=False):
        assert time.sleep is real_sleep and time.monotonic is real_mono
        m0, p0 = time.monotonic(), time.perf_counter()
        early_sleep(0.01)  # really sleeps
        assert time.monotonic() - m0 >= 0.009 and time.perf_counter() - p0 >= 0.009


def test_escape_hatch_reads_real_time_only_while_travelling():
    before = time.time()
    with time_machine.travel(0, tick=False):
        assert escape_hatch.is_travelling()
        real, now = escape_hatch.time.time(), escape_hatch.datetime.datetime.now(UTC).timestamp()
    after = time.time()
    assert before <= real <= after  # the real clock, however slow the machine
    assert before - 1e-6 <= now <= after + 1e-6  # (a datetime keeps whole microseconds)
    assert not escape_hatch.is_travelling()
    with pytest.raises(ValueError):
        escape_hatch.time.time()


def test_patching_is_process_wide_not_per_thread():
    seen = []
    with time_machine.travel(0, tick=False):
        t = threading.Thread(target=lambda: seen.append(time.time()))
        t.start()
        t.join()
    assert seen == [0.0]


def test_an_aware_utc_datetime_destination_sets_tz_for_the_travel():
    import os
    before = os.environ.get("TZ")
    with time_machine.travel(datetime(2030, 1, 1, tzinfo=UTC), tick=False):
        assert os.environ.get("TZ") == "UTC"
    assert os.environ.get("TZ") == before
    with time_machine.travel(1_900_000_000, tick=False):  # a number: TZ untouched
        assert os.environ.get("TZ") == before


def test_uuid1_follows_the_travel():
    with time_machine.travel(1_000_000_000, tick=False):
        u = uuid.uuid1()
    # uuid1 time: 100 ns intervals since 1582-10-15
    seconds = (u.time - 0x01B21DD213814000) / 10**7
    assert abs(seconds - 1_000_000_000) < 1
