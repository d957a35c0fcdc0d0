"""The report of ``acksim crosscheck`` (``acksim.live.crosscheck``): crosscheck.md and
crosscheck.json from its rows.

crosscheck.md: the agreement rates (schedules agreeing on every invariant; verdicts), a row per
schedule with each invariant's verdict as sim/live, a table of the timing-dependent figures side
by side with the stated tolerances (``COUNT_TOLERANCE``, ``RECOVERY_TOLERANCE_REL``; a figure
outside its tolerance is starred), and for every disagreement the example and the records of
its account side by side; both whole timelines go beside it as ``rowNN-sim.csv`` and
``rowNN-live.csv``. crosscheck.json holds the same as data. Times are virtual seconds.
"""

from __future__ import annotations

import json
from pathlib import Path

from acksim.history import to_csv
from acksim.judges.invariants import INVARIANTS
from acksim.live.crosscheck import COUNT_TOLERANCE, RECOVERY_TOLERANCE_REL


def _fmt(v) -> str:
    if v is None:
        return "-"
    if float(v).is_integer():
        return str(int(v))
    return f"{v:.0f}" if abs(v) >= 10 else f"{v:.1f}"


def _dist(d: dict) -> str:
    return " ".join(f"{k}:{v}" for k, v in sorted(d.items())) or "-"


def write_crosscheck(out: Path, rows: list, broker: str) -> dict:
    """Write crosscheck.md, crosscheck.json and the disagreeing timelines of ``rows``
    (``acksim.live.crosscheck.Row``) into ``out``; returns the json document."""
    out.mkdir(parents=True, exist_ok=True)
    names = [n for n, _ in INVARIANTS]
    agree = sum(r.agrees for r in rows)
    verdicts = len(rows) * len(names)
    verdicts_agree = sum(r.sim[n]["holds"] == r.live[n]["holds"] for r in rows for n in names)
    doc = {"broker": broker, "version": rows[0].live_info.get("version") if rows else None,
           "schedules": len(rows), "agreeing": agree, "agreement_rate": agree / len(rows) if rows else None,
           "verdicts": verdicts, "verdicts_agreeing": verdicts_agree,
           "verdict_agreement_rate": verdicts_agree / verdicts if verdicts else None,
           "sim_violating": sum(not all(r.sim[n]["holds"] for n in names) for r in rows),
           "live_violating": sum(not all(r.live[n]["holds"] for n in names) for r in rows),
           "tolerance": {"counts": {"absolute": COUNT_TOLERANCE[0], "relative": COUNT_TOLERANCE[1]},
                         "recovery": {"absolute": "visibility timeout + restart delay (virtual s)",
                                      "relative": RECOVERY_TOLERANCE_REL}},
           "wall_s": round(sum(r.wall_s for r in rows), 1),
           "rows": [{"label": r.label, "candidate": r.candidate, "processor": r.processor, "time_scale": r.scale,
                     "agrees": r.agrees, "sim": {n: r.sim[n]["holds"] for n in names},
                     "live": {n: r.live[n]["holds"] for n in names}, "disagreements": r.examples,
                     "sim_figures": r.sim_figures, "live_figures": r.live_figures,
                     "figures_within_tolerance": r.counts_within, "wall_s": r.wall_s,
                     "live_stop_reason": r.live_info.get("stop_reason", "")}
                    for r in rows]}
    (out / "crosscheck.json").write_text(json.dumps(doc, indent=2, default=str) + "\n")
    short = {"no_cleanup_after_renewal": "renewal", "at_most_once_effect": "once", "effect_with_outbox": "outbox",
             "ack_after_durable": "ack", "no_lost_work": "lost"}
    rate = doc["agreement_rate"] or 0.0
    vrate = doc["verdict_agreement_rate"] or 0.0
    lines = [f"# acksim crosscheck: simulation vs {broker} {doc['version'] or ''}", "",
             f"{agree} of {len(rows)} schedules agree on every invariant (schedule agreement {rate:.0%}); "
             f"{verdicts_agree} of {verdicts} verdicts agree ({vrate:.1%}); {doc['sim_violating']} schedules "
             f"violate an invariant in the simulation, {doc['live_violating']} live. Wall time {doc['wall_s']:g} s.",
             "", "Verdicts as sim/live: `ok` holds, `X` violated.", "",
             "| schedule | candidate | scale | " + " | ".join(short[n] for n in names) + " | agree |",
             "| --- | --- | --- | " + " | ".join("---" for _ in names) + " | --- |"]
    for r in rows:
        cells = [f"{'ok' if r.sim[n]['holds'] else 'X'}/{'ok' if r.live[n]['holds'] else 'X'}" for n in names]
        lines.append(f"| {r.label} | {r.candidate} | {r.scale:g} | " + " | ".join(cells)
                     + f" | {'yes' if r.agrees else '**no**'} |")
    a, rel = COUNT_TOLERANCE
    lines += ["", "## Timing-dependent figures, sim / live", "",
              f"Counts agree within max({a:g}, {rel:.0%} of the simulation's); recovery times (virtual s, failed "
              f"execution to the ack of that message) within max(visibility timeout + restart delay, "
              f"{RECOVERY_TOLERANCE_REL:.0%}). `*` marks a figure outside its tolerance. These do not count "
              "toward agreement; verdicts must match exactly.", "",
              "| schedule | deliveries | redeliveries | dead-lettered | crashes | receive counts sim | "
              "receive counts live | recovery p50 | recovery max |",
              "| --- | --- | --- | --- | --- | --- | --- | --- | --- |"]
    for r in rows:
        s, lv, ok = r.sim_figures, r.live_figures, r.counts_within

        def pair(k):
            return f"{_fmt(s.get(k))} / {_fmt(lv.get(k))}{'' if ok.get(k, True) else ' *'}"
        lines.append(f"| {r.label} | {pair('deliveries')} | {pair('redeliveries')} | {pair('dead_lettered')} | "
                     f"{s.get('crashes', 0)} / {lv.get('crashes', 0)} | {_dist(s.get('receive_counts', {}))} | "
                     f"{_dist(lv.get('receive_counts', {}))} | {pair('recovery_p50_s')} | {pair('recovery_max_s')} |")
    for i, r in enumerate(rows):
        if r.agrees:
            continue
        stem = f"row{i + 1:02d}"
        (out / f"{stem}-sim.csv").write_text(to_csv(r.sim_history))
        (out / f"{stem}-live.csv").write_text(to_csv(r.live_history))
        lines += ["", f"## Disagreement: {r.label} ({r.candidate})", "",
                  f"Timelines: [{stem}-sim.csv]({stem}-sim.csv), [{stem}-live.csv]({stem}-live.csv)."]
        for n, ex in r.examples.items():
            lines += ["", f"### {n}: sim {'holds' if r.sim[n]['holds'] else 'violated'}, "
                          f"live {'holds' if r.live[n]['holds'] else 'violated'}", ""]
            example = ex["sim"] or ex["live"] or {}
            lines.append(f"Example: `{json.dumps(example, default=str)}`")
            aid = example.get("account_id")
            if aid:
                lines += ["", f"Records of {aid}, side by side (virtual s):", "",
                          "| sim time | sim kind | sim actor | msg | rc | live time | live kind | live actor | msg | rc |",
                          "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |",
                          *_side_by_side(r.sim_history, r.live_history, aid)]
    (out / "crosscheck.md").write_text("\n".join(lines) + "\n")
    return doc


def _side_by_side(sim_h, live_h, account_id) -> list[str]:
    def cells(r):
        if r is None:
            return "| | | | |"
        return (f"{r.time:.3f} | {r.kind}{(': ' + r.detail[:40]) if r.detail else ''} | {r.actor} | "
                f"{r.message_id if r.message_id is not None else ''} | "
                f"{r.receive_count if r.receive_count is not None else ''} |")
    a = [r for r in sim_h if r.account_id == account_id]
    b = [r for r in live_h if r.account_id == account_id]
    out = []
    for i in range(max(len(a), len(b))):
        out.append("| " + cells(a[i] if i < len(a) else None) + " " + cells(b[i] if i < len(b) else None))
    return out


__all__ = ["write_crosscheck"]
