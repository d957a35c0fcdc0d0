"""The hazard windows of recovery sweeps and tombstones, judged from the history alone: a sweep
that recovers a delivery after its visibility timeout, and a tombstone delivered."""


def test_the_sweep_and_tombstone_hazard_windows_are_judged_from_the_history_alone():
    from acksim.history import Record
    from acksim.judges.hazards import HAZARDS, hazards_hit

    late = [Record(3700.0, 0, "visibility_expired", "queue", 1, detail="recovered:process_start:late")]
    in_time = [Record(110.0, 0, "visibility_expired", "queue", 1, detail="recovered:process_start")]
    tomb = [Record(360.0, 0, "delivered", "worker-1", 1, detail="tombstone")]
    assert [name for name, _ in HAZARDS][-2:] == ["sweep_recovery_after_visibility_timeout", "tombstone_delivered"]
    assert hazards_hit(late)["sweep_recovery_after_visibility_timeout"]
    assert not hazards_hit(in_time)["sweep_recovery_after_visibility_timeout"]
    assert hazards_hit(tomb)["tombstone_delivered"] and not hazards_hit(late)["tombstone_delivered"]
