"""Reminders are counted per outbox row, with exact virtual times: a second row of one key is
sent on its own, not marked sent with the first."""

from acksim.judges.summary import build_summary
from acksim.world.core import simulate


def test_a_second_outbox_row_of_one_key_is_sent_on_its_own_not_marked_with_the_first(tiny):
    # naive design (autocommit, no unique keys): the outbox row of the first run commits at
    # 102 and the worker crashes after its third call (103); the relay reads row 1 at its
    # poll at 105 and sends it 60 s later (165); meanwhile the redelivery (160) commits row 2
    # at 162. Marking "sent" by key used to mark row 2 too, and it was never sent.
    from acksim.model.candidates import naive
    from acksim.scenario import parse
    from helpers.tinyworld import tiny_dict

    def scenario(idempotent):
        return parse(tiny_dict(workers={"transaction_scope": "autocommit"},
                               stores={"unique_markers": False, "unique_outbox_keys": False},
                               faults={"crashes": [{"delivery": 1, "phase": "after_call", "call": 2}]},
                               mail={"provider_idempotency": idempotent, "latency_s": 60}))

    for idempotent, second in ((False, "reminder_sent"), (True, "reminder_duplicate")):
        sc = scenario(idempotent)
        outcome = simulate(sc, naive)
        assert [(r.time, r.kind) for r in outcome.history if r.kind in ("outbox_added", "reminder_sent",
                                                                          "reminder_duplicate")] == [
            (102.0, "outbox_added"), (162.0, "outbox_added"),
            (165.0, "reminder_sent"), (230.0, second)]  # row 2: poll at 170, sent at 230
        counts = build_summary(sc, outcome)["counts"]
        assert (counts["reminders_sent"], counts["reminder_duplicates"]) == ((2, 0) if not idempotent else (1, 1))
