"""Presets: the queues and schedulers of the design documents, as scenario defaults.

A scenario names one with ``[queue] preset = "sqs-standard"``; the preset's values fill every
table field the scenario leaves out (a field the scenario sets wins), and its ``limits``
bound the queue fields to the documented ranges of that system. Every default carries its
source: a tag of ``docs/queue-semantics.md`` (its section "Sources" resolves the tags),
"seed-facts" for ``docs/seed-facts.md``, or "acksim:" for a value the documentation leaves to
the user, with the choice made here. ``acksim presets NAME`` prints them (``Preset.doc``).

``characteristic_hazard`` is the failure each system is known for (docs/queue-semantics.md,
"Notable gotchas"), shown side by side by ``acksim compare``; ``hazard_kinds`` are the
history record kinds (with a detail prefix, "kind:detail") that witness it in a run: records of the
mechanism behind the hazard (a late ack whose lease had lapsed, a channel closed by the ack
timeout, a claim, a stall, a misfire...), counted by ``acksim compare``.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field

HORIZON_S = 400 * 86_400.0  # the longest virtual time (acksim.scenario.HORIZON_S): "no limit"


@dataclass(frozen=True)
class Preset:
    """One system: ``tables`` maps a scenario table to its default fields; ``sources`` maps
    each of those fields ("table.field") to the documentation it comes from (source tags of
    docs/queue-semantics.md, or "acksim: ..." for a choice of ours); ``limits`` maps a
    ``queue`` field to its documented (low, high) range, both inclusive."""

    name: str
    summary: str
    tables: dict
    sources: dict
    limits: dict = field(default_factory=dict)
    characteristic_hazard: str = ""
    hazard_kinds: tuple[str, ...] = ()

    @property
    def doc(self) -> str:
        """Every default with its source, one per line (what ``acksim presets NAME`` prints)."""
        lines = [f"{self.name}: {self.summary}", f"characteristic hazard: {self.characteristic_hazard}"]
        for table, fields in self.tables.items():
            for key, value in fields.items():
                lines.append(f"  {table}.{key} = {value!r}  [{self.sources[f'{table}.{key}']}]")
        for key, (lo, hi) in self.limits.items():
            lines.append(f"  limit: {_num(lo)} <= queue.{key} <= {_num(hi)}")
        return "\n".join(lines)


_SQS_LIMITS = {"visibility_timeout_s": (0.0, 43_200.0), "max_lease_s": (0.0, 43_200.0), "prefetch": (1, 10),
               "max_receive_count": (0, 1000), "max_delay_s": (0.0, 900.0),
               "retention_s": (60.0, 1_209_600.0), "max_message_bytes": (1024, 1_048_576)}
_SQS_RESTART = {"on_broker_restart": "lease"}
_SQS_RESTART_SOURCES = {"queue.on_broker_restart": "AWS-VIS: a message stays in flight until its visibility "
                                                   "timeout, whatever happened to the consumer"}
_REDIS_RESTART = {"on_broker_restart": "lease", "broker_lost_writes_s": 1.0}
_REDIS_RESTART_SOURCES = {
    "queue.on_broker_restart": "R-XCL, B-STALL: pending entries and active jobs stay until a claimer or the "
                               "stalled check finds them idle (section 12)",
    "queue.broker_lost_writes_s": "R-PERSIST: AOF appendfsync everysec loses up to 1 s of writes; acksim: AOF "
                                  "assumed (RDB only: the writes since the last snapshot; none: 'lost')"}
_RMQ_QUEUE = {"redelivery": "consumer_death", "visibility_timeout_s": 1800.0, "sweep_interval_s": 60.0,
              "disconnect_detect_s": 60.0, "max_lease_s": HORIZON_S, "max_delay_s": 0.0,
              "retention_s": HORIZON_S, "max_message_bytes": 16_777_216, "nack_backoff_base_s": 0.0,
              "nack_backoff_max_s": 0.0, "requeue_at_head": True, "on_broker_restart": "requeue"}
_RMQ_SOURCES = {
    "queue.redelivery": "RMQ-CONF: unacked deliveries are requeued when the channel or connection closes",
    "queue.visibility_timeout_s": "RMQ-CONS: consumer_timeout 30 min (the delivery ack timeout)",
    "queue.sweep_interval_s": "RMQ-CONS: the ack timeout is evaluated once per minute",
    "queue.disconnect_detect_s": "RMQ-HB: heartbeat timeout 60 s suggested by the server",
    "queue.max_lease_s": "RMQ-CONS: no cap beyond the ack timeout",
    "queue.max_delay_s": "RMQ-DELAY: no delay in core (a plugin); the scheduler holds the timer",
    "queue.retention_s": "RMQ-DLX: no expiry unless a TTL is set",
    "queue.max_message_bytes": "RMQ-MAXMSG: max_message_size 16 MiB since 4.0 (configurable to the 512 MiB cap)",
    "queue.nack_backoff_base_s": "RMQ-CONF: basic.nack/reject with requeue: no delay",
    "queue.nack_backoff_max_s": "RMQ-CONF: no delay",
    "queue.requeue_at_head": "RMQ-CONF: a requeued message goes back to its original position, or nearer the head",
    "queue.on_broker_restart": "RMQ-CONF: unacked deliveries of a lost connection (a broker restart) are requeued",
}

PRESETS: dict[str, Preset] = {p.name: p for p in (
    Preset(
        "rest-queue",
        "the design documents' queue: visibility timeout, 256 KB, 7-day delay, 30-day retention",
        tables={"queue": {"redelivery": "visibility_timeout", "visibility_timeout_s": 30.0,
                          "max_lease_s": 43_200.0, "max_receive_count": 5, "max_delay_s": 604_800.0,
                          "retention_s": 2_592_000.0, "max_message_bytes": 262_144,
                          "fifo_dedup_window_s": 300.0}},
        sources={"queue.redelivery": "seed-facts: visibility timeout redelivery",
                 "queue.visibility_timeout_s": "AWS-Q: 30 s default (the documents give none)",
                 "queue.max_lease_s": "AWS-VIS: 12 h cap (the documents give none)",
                 "queue.max_receive_count": "acksim: 5 (the documents: dead-lettered after a bounded policy)",
                 "queue.max_delay_s": "seed-facts: delayed delivery at most 7 days",
                 "queue.retention_s": "seed-facts: retention at most 30 days",
                 "queue.max_message_bytes": "seed-facts: message body limit 256 KB",
                 "queue.fifo_dedup_window_s": "seed-facts: FIFO deduplication window 5 minutes"},
        limits={"visibility_timeout_s": (0.0, 43_200.0), "max_lease_s": (0.0, 43_200.0),
                "max_receive_count": (0, 1000), "max_delay_s": (0.0, 604_800.0),
                "retention_s": (60.0, 2_592_000.0), "max_message_bytes": (1024, 262_144),
                "fifo_dedup_window_s": (0.0, 300.0)},
        characteristic_hazard="a job running longer than the visibility timeout runs again concurrently",
        hazard_kinds=("ack_stale:receipt_expired",)),
    Preset(
        "sqs-standard",
        "Amazon SQS standard: visibility timeout 30 s (12 h cap), spurious duplicates, no DLQ by default",
        tables={"queue": {"kind": "standard", "redelivery": "visibility_timeout", "visibility_timeout_s": 30.0,
                          "max_lease_s": 43_200.0, "max_receive_count": 0, "max_delay_s": 900.0,
                          "retention_s": 345_600.0, "max_message_bytes": 262_144,
                          "duplicate_probability": 0.0005, "ack_by": "receipt", **_SQS_RESTART}},
        sources={"queue.kind": "AWS-STD: standard queue, at-least-once, best-effort order",
                 "queue.ack_by": "AWS-DEL: DeleteMessage takes the receipt handle of the latest receive; "
                                 "an older one may not delete the message",
                 "queue.redelivery": "AWS-VIS: receivable again when the visibility timeout expires",
                 "queue.visibility_timeout_s": "AWS-Q, AWS-VIS: default 30 s, range 0 s-12 h",
                 "queue.max_lease_s": "AWS-VIS: ChangeMessageVisibility capped at 12 h from receipt",
                 "queue.max_receive_count": "AWS-DLQ: no redrive policy by default (maxReceiveCount 1-1000)",
                 "queue.max_delay_s": "AWS-Q, AWS-QQ: delay at most 15 min",
                 "queue.retention_s": "AWS-Q: default 4 days, 60 s-14 days",
                 "queue.max_message_bytes": "PULUMI-SQS: MaximumMessageSize default 256 KiB (AWS-SEND: 1 MiB max)",
                 "queue.duplicate_probability": "AWS-STD: 'occasionally more than one copy'; no rate "
                                                "documented, acksim: 1 in 2,000 deliveries",
                 **_SQS_RESTART_SOURCES},
        limits=_SQS_LIMITS,
        characteristic_hazard="duplicates without any failure; a message never acked is redelivered until retention",
        hazard_kinds=("delivered:duplicate",)),
    Preset(
        "sqs-fifo",
        "Amazon SQS FIFO: send-side deduplication for 5 minutes, visibility timeout as standard",
        tables={"queue": {"kind": "fifo", "redelivery": "visibility_timeout", "visibility_timeout_s": 30.0,
                          "max_lease_s": 43_200.0, "max_receive_count": 0, "max_delay_s": 900.0,
                          "retention_s": 345_600.0, "max_message_bytes": 262_144,
                          "fifo_dedup_window_s": 300.0, "duplicate_probability": 0.0, "ack_by": "receipt",
                          **_SQS_RESTART}},
        sources={"queue.kind": "AWS-FIFO-KEY: FIFO queue (message-group ordering not modelled)",
                 "queue.ack_by": "AWS-DEL: DeleteMessage by receipt handle, as standard",
                 "queue.redelivery": "AWS-VIS: same visibility model as standard",
                 "queue.visibility_timeout_s": "AWS-VIS: 30 s default, at most 12 h",
                 "queue.max_lease_s": "AWS-VIS: 12 h from receipt",
                 "queue.max_receive_count": "AWS-DLQ: no redrive policy by default",
                 "queue.max_delay_s": "AWS-SEND: queue-level delay only, 0-15 min",
                 "queue.retention_s": "AWS-Q: as standard, 4 days",
                 "queue.max_message_bytes": "AWS-SEND, PULUMI-SQS: as standard",
                 "queue.fifo_dedup_window_s": "AWS-FIFO-KEY: 5-minute deduplication interval",
                 "queue.duplicate_probability": "AWS-FIFO-KEY: no duplicates within the interval",
                 **_SQS_RESTART_SOURCES},
        limits={**_SQS_LIMITS, "fifo_dedup_window_s": (300.0, 300.0)},
        characteristic_hazard="deduplication only within 5 minutes: a republish after that is a second job",
        hazard_kinds=("deduplicated",)),
    Preset(
        "rabbitmq-classic",
        "RabbitMQ classic queue, manual ack: requeue on consumer death and on the 30-min ack timeout",
        tables={"queue": {**_RMQ_QUEUE, "max_receive_count": 0}},
        sources={**_RMQ_SOURCES, "queue.max_receive_count": "RMQ-QQ: classic queues requeue without limit or counter"},
        limits={"visibility_timeout_s": (60.0, HORIZON_S), "max_message_bytes": (1024, 536_870_912)},
        characteristic_hazard="the ack timeout closes the whole channel and requeues every unacked delivery; "
                              "no requeue limit",
        hazard_kinds=("visibility_expired:consumer_timeout",)),
    Preset(
        "rabbitmq-quorum",
        "RabbitMQ quorum queue: as classic, plus the delivery limit of 20 (dead-lettered or dropped)",
        tables={"queue": {**_RMQ_QUEUE, "max_receive_count": 0, "delivery_limit": 20, "on_exhaustion": "dead_letter"}},
        sources={**_RMQ_SOURCES, "queue.max_receive_count": "RMQ-QQ: no receive-count limit; the delivery limit "
                                                            "counts returns",
                 "queue.delivery_limit": "RMQ-QQ, RMQ-PR11937: delivery-limit 20 since 4.0; a message returned "
                                         "more times than the limit is dropped or dead-lettered (21 deliveries)",
                 "queue.on_exhaustion": "RMQ-QQ: past the limit dead-lettered if a DLX exists, else dropped "
                                        "(set 'drop' for no dead-letter target)"},
        limits={"visibility_timeout_s": (60.0, HORIZON_S), "max_message_bytes": (1024, 536_870_912)},
        characteristic_hazard="past the delivery limit a message is dead-lettered, or silently dropped without a target",
        hazard_kinds=("dead_lettered", "dropped")),
    Preset(
        "redis-streams",
        "Redis Streams consumer group: pending entries come back only when a claimer runs",
        tables={"queue": {"redelivery": "claim", "visibility_timeout_s": 300.0, "sweep_interval_s": 60.0,
                          "max_lease_s": HORIZON_S, "max_receive_count": 0, "max_delay_s": 0.0,
                          "retention_s": HORIZON_S, "max_message_bytes": 536_870_912, "max_length": 0,
                          "nack_backoff_base_s": 0.0, "nack_backoff_max_s": 0.0, "ack_by": "message_id",
                          "tombstones": True, **_REDIS_RESTART}},
        sources={**_REDIS_RESTART_SOURCES,
                 "queue.redelivery": "R-XRG, R-XCL: no automatic redelivery; XCLAIM/XAUTOCLAIM take idle entries",
                 "queue.ack_by": "R-XACK: XACK names the entry id and removes it from the group's PEL, "
                                 "whichever consumer it was claimed by",
                 "queue.tombstones": "R-XRG, R-XAC: a trimmed or deleted entry stays in the PEL and is claimed "
                                     "or re-read as an id with a nil payload (XAUTOCLAIM returns it as deleted)",
                 "queue.visibility_timeout_s": "R-XCL: min-idle-time is the caller's, no default; acksim: 300 s",
                 "queue.sweep_interval_s": "R-XAC: the claimer runs when the application runs it; acksim: every 60 s",
                 "queue.max_lease_s": "R-XCL: an entry stays pending indefinitely",
                 "queue.max_receive_count": "R-INTRO: a delivery counter, no DLQ",
                 "queue.max_delay_s": "queue-semantics §4: no delayed delivery",
                 "queue.retention_s": "R-INTRO: unbounded unless trimmed",
                 "queue.max_message_bytes": "R-512: proto-max-bulk-len 512 MB",
                 "queue.max_length": "R-INTRO: no cap unless MAXLEN/MINID; R-XRG: trimming drops pending entries too",
                 "queue.nack_backoff_base_s": "R-INTRO: XNACK hands entries back at once",
                 "queue.nack_backoff_max_s": "R-INTRO: no delay"},
        limits={"max_message_bytes": (1024, 536_870_912)},
        characteristic_hazard="a dead consumer's entries stay pending until a claimer runs; "
                              "a length cap trims them even while pending",
        hazard_kinds=("visibility_expired:claimed", "trimmed")),
    Preset(
        "celery-redis",
        "Celery on Redis: early ack by default, 1 h visibility timeout, ETA jobs held by the worker",
        tables={"queue": {"redelivery": "visibility_timeout", "visibility_timeout_s": 3600.0,
                          "max_lease_s": HORIZON_S, "eta_held_by_worker": True, "on_worker_lost": "ack",
                          "max_receive_count": 0, "max_attempts": 4, "max_delay_s": HORIZON_S,
                          "retention_s": HORIZON_S, "max_message_bytes": 536_870_912,
                          "nack_backoff_base_s": 180.0, "nack_backoff_max_s": 180.0, **_REDIS_RESTART},
                "workers": {"ack_policy": "before_processing"}},
        sources={**_REDIS_RESTART_SOURCES,
                 "queue.redelivery": "C-GLOSS: on Redis the broker's visibility_timeout redelivers",
                 "queue.visibility_timeout_s": "C-REDIS: visibility_timeout 1 h",
                 "queue.max_lease_s": "C-REDIS: no extension mechanism",
                 "queue.eta_held_by_worker": "C-CALL: an ETA/countdown task is fetched at once and held unacked",
                 "queue.on_worker_lost": "C-TASKS, C-CONF: with acks_late a lost worker's message is acked "
                                         "unless task_reject_on_worker_lost ('requeue')",
                 "queue.max_receive_count": "C-DISC: broker requeues carry no counter",
                 "queue.max_attempts": "C-TASKPY: max_retries 3, so 4 attempts",
                 "queue.max_delay_s": "C-CALL: ETA of any length (held by the worker)",
                 "queue.retention_s": "queue-semantics §5: inherited from Redis, no expiry",
                 "queue.max_message_bytes": "R-512: Redis strings up to 512 MB",
                 "queue.nack_backoff_base_s": "C-TASKPY: default_retry_delay 180 s",
                 "queue.nack_backoff_max_s": "C-TASKPY: fixed 180 s",
                 "workers.ack_policy": "C-CONF: acks early by default (acks_late=True: 'after_commit')"},
        limits={"max_message_bytes": (1024, 536_870_912)},
        characteristic_hazard="an ETA beyond the visibility timeout is received again and runs once per copy "
                              "at the due time",
        hazard_kinds=("ack_stale:receipt_expired", "acked:worker_lost")),
    Preset(
        "bullmq",
        "BullMQ: a 30 s lock renewed by the worker, a stalled check every 30 s, one stall allowed",
        tables={"queue": {"redelivery": "stalled_sweep", "visibility_timeout_s": 30.0, "heartbeat_interval_s": 15.0,
                          "sweep_interval_s": 30.0, "max_stalled_count": 1, "max_lease_s": HORIZON_S,
                          "max_receive_count": 0, "max_attempts": 1, "max_delay_s": HORIZON_S,
                          "retention_s": HORIZON_S, "max_message_bytes": 536_870_912,
                          "nack_backoff_base_s": 0.0, "nack_backoff_max_s": 0.0, **_REDIS_RESTART}},
        sources={**_REDIS_RESTART_SOURCES,
                 "queue.redelivery": "B-WO, B-STALL: an expired lock found by the stalled checker",
                 "queue.visibility_timeout_s": "B-WO: lockDuration 30,000 ms",
                 "queue.heartbeat_interval_s": "B-WO: the lock is renewed every lockDuration/2",
                 "queue.sweep_interval_s": "B-WO: stalledInterval 30,000 ms",
                 "queue.max_stalled_count": "B-WO: maxStalledCount 1",
                 "queue.max_lease_s": "B-STALL: renewed for as long as the worker lives",
                 "queue.max_receive_count": "B-WO: maxStartedAttempts unset",
                 "queue.max_attempts": "B-JO: attempts 1 (no retry)",
                 "queue.max_delay_s": "B-JO: no documented maximum delay",
                 "queue.retention_s": "B-AUTORM: kept until removed",
                 "queue.max_message_bytes": "R-512: Redis strings up to 512 MB",
                 "queue.nack_backoff_base_s": "B-RETRY: no backoff by default",
                 "queue.nack_backoff_max_s": "B-RETRY: no backoff by default"},
        limits={"max_message_bytes": (1024, 536_870_912)},
        characteristic_hazard="a second stall fails the job; a worker that misses its lock renewal runs next to another",
        hazard_kinds=("visibility_expired:stalled", "dead_lettered:max_stalled_count")),
    Preset(
        "temporal",
        "Temporal activity: start-to-close timeout, retries 1 s doubling to 100 s, unlimited, durable timer",
        tables={"queue": {"redelivery": "visibility_timeout", "visibility_timeout_s": 300.0, "max_lease_s": HORIZON_S,
                          "heartbeat_interval_s": 0.0, "max_receive_count": 0, "max_attempts": 0,
                          "max_delay_s": HORIZON_S, "retention_s": HORIZON_S, "max_message_bytes": 2_097_152,
                          "nack_backoff_base_s": 1.0, "nack_backoff_max_s": 100.0}},
        sources={"queue.redelivery": "T-AF: a new attempt after the Start-To-Close timeout",
                 "queue.visibility_timeout_s": "T-AF: Start-To-Close has no default (it or Schedule-To-Close "
                                               "must be set); acksim: 300 s",
                 "queue.max_lease_s": "T-AF: no cap but Schedule-To-Close (default unlimited)",
                 "queue.heartbeat_interval_s": "T-AF: heartbeat timeout unset = off (to model one: "
                                               "visibility_timeout_s = the heartbeat timeout, max_lease_s = "
                                               "start-to-close, heartbeat_interval_s = the SDK's throttle)",
                 "queue.max_receive_count": "T-RP: maximum attempts unlimited",
                 "queue.max_attempts": "T-RP: maximum attempts unlimited",
                 "queue.max_delay_s": "T-TIMER: durable timers for months or years",
                 "queue.retention_s": "queue-semantics §7: not documented; acksim: no limit",
                 "queue.max_message_bytes": "T-LIM: payload error at 2 MB",
                 "queue.nack_backoff_base_s": "T-RP: initial interval 1 s, coefficient 2",
                 "queue.nack_backoff_max_s": "T-RP: maximum interval 100 x initial"},
        limits={"max_message_bytes": (1024, 2_097_152)},
        characteristic_hazard="crash detection is timeout-only: a crashed worker's activity waits out its "
                              "start-to-close timeout",
        hazard_kinds=("visibility_expired",)),
    Preset(
        "airflow",
        "Apache Airflow task: periodic runs, no retries, 300 s heartbeat timeout, catch-up of the latest run",
        tables={"queue": {"redelivery": "visibility_timeout", "visibility_timeout_s": 300.0,
                          "heartbeat_interval_s": 5.0, "sweep_interval_s": 10.0, "max_lease_s": HORIZON_S,
                          "max_receive_count": 0, "max_attempts": 1, "max_delay_s": HORIZON_S,
                          "retention_s": HORIZON_S, "max_message_bytes": 536_870_912,
                          "nack_backoff_base_s": 300.0, "nack_backoff_max_s": 86_400.0},
                "scheduler": {"mode": "cron", "cron_interval_s": 300.0, "misfire_grace_s": 0.0, "catchup": "latest"},
                "workers": {"execution_timeout_s": 0.0}},
        sources={"queue.redelivery": "A-CFG: a task whose heartbeat is missing is failed and rescheduled",
                 "queue.visibility_timeout_s": "A-CFG: task_instance_heartbeat_timeout 300 s",
                 "queue.heartbeat_interval_s": "acksim: a live task heartbeats every 5 s (not in the sources read)",
                 "queue.sweep_interval_s": "A-CFG: the heartbeat timeout is checked every 10 s",
                 "queue.max_lease_s": "A-CFG: default_task_execution_timeout empty, never times out (an "
                                      "execution timeout: max_lease_s with workers.stop_when_lease_lost)",
                 "queue.max_receive_count": "A-CFG: no broker-side limit",
                 "queue.max_attempts": "A-CFG: default_task_retries 0, one try",
                 "queue.max_delay_s": "queue-semantics §8: n/a (the scheduler's interval)",
                 "queue.retention_s": "queue-semantics §8: not documented; acksim: no limit",
                 "queue.max_message_bytes": "queue-semantics §8: not documented",
                 "queue.nack_backoff_base_s": "A-CFG: default_task_retry_delay 300 s",
                 "queue.nack_backoff_max_s": "A-CFG: max_task_retry_delay 86,400 s",
                 "scheduler.mode": "A-DR: a DAG run per schedule interval",
                 "scheduler.cron_interval_s": "acksim: a DAG scheduled every 5 minutes",
                 "scheduler.misfire_grace_s": "A-DR: a run is for its interval; an interval the scheduler "
                                              "missed is a missed run (no grace)",
                 "scheduler.catchup": "A-CFG: catchup_by_default False in Airflow 3, only the latest interval runs",
                 "workers.execution_timeout_s": "A-CFG: default_task_execution_timeout empty, never times out"},
        limits={"max_message_bytes": (1024, 536_870_912)},
        characteristic_hazard="with no retries a failed task stays failed; catch-up runs only the latest missed interval",
        hazard_kinds=("dead_lettered:max_attempts", "cron_run_skipped")),
    Preset(
        "cron",
        "the rejected design: a periodic run, 900 s limit, no backfill, 1 s misfire grace, no redelivery",
        tables={"queue": {"redelivery": "none", "max_receive_count": 0, "max_delay_s": 0.0,
                          "retention_s": HORIZON_S, "max_message_bytes": 536_870_912},
                "scheduler": {"mode": "cron", "cron_interval_s": 300.0, "cron_run_limit_s": 900.0,
                              "misfire_grace_s": 1.0, "catchup": "none"}},
        sources={"queue.redelivery": "ANA: nothing is persisted; the run does the work itself (pop-on-fetch)",
                 "queue.max_receive_count": "queue-semantics §9: no retries",
                 "queue.max_delay_s": "queue-semantics §9: n/a",
                 "queue.retention_s": "queue-semantics §9: n/a",
                 "queue.max_message_bytes": "queue-semantics §9: n/a",
                 "scheduler.mode": "seed-facts: the periodic job the documents reject",
                 "scheduler.cron_interval_s": "acksim: every 5 minutes (CRON: checked once per minute)",
                 "scheduler.cron_run_limit_s": "seed-facts: cron execution limit 900 s per run",
                 "scheduler.misfire_grace_s": "APScheduler misfire_grace_time default 1 s (Quartz misfireThreshold 60 s)",
                 "scheduler.catchup": "ANA: runs missed while down are never run"},
        limits={"max_message_bytes": (1024, 536_870_912)},
        characteristic_hazard="a stalled trigger past its misfire grace is skipped; a run that dies loses its jobs "
                              "until the next run",
        hazard_kinds=("cron_run_skipped:misfire",)),
)}

DEFAULT_PRESET = "rest-queue"


def _num(value: float) -> str:
    """A number as a person writes it: 43200, 0.5, 536870912 (no exponent)."""
    return str(int(value)) if float(value).is_integer() else f"{value:g}"


def apply_preset(data: dict) -> tuple[dict, Preset]:
    """``data`` (a parsed scenario) with its queue preset's tables filled in under the
    fields it sets, and the preset. Raises KeyError naming the allowed presets for an unknown
    one; ``data`` is not modified."""
    queue = data.get("queue") if isinstance(data.get("queue"), dict) else {}
    name = queue.get("preset", DEFAULT_PRESET)
    if not isinstance(name, str) or name not in PRESETS:
        shown = repr(name) if isinstance(name, str) else json.dumps(name)  # TOML's true, not Python's True
        raise KeyError(f"queue.preset: unknown preset {shown}; allowed: {', '.join(PRESETS)}")
    preset = PRESETS[name]
    out = dict(data)
    for table, defaults in preset.tables.items():
        given = data.get(table)
        out[table] = {**defaults, **given} if isinstance(given, dict) else (given if given is not None else dict(defaults))
    return out, preset


def limit_violation(preset: Preset, queue) -> str | None:
    """The first queue field outside the preset's documented range, as "queue.<field>: ...",
    or None."""
    for name, (lo, hi) in preset.limits.items():
        value = getattr(queue, name)
        if not lo <= value <= hi:
            return (f"queue.{name}: the {preset.name} preset allows {_num(lo)} <= value <= {_num(hi)} "
                    f"(got {_num(value)})")
    return None


def listing() -> str:
    """The text of ``acksim presets``: one line per preset (name, redelivery mechanism,
    lease in seconds, summary), then how to see one whole."""
    lines = []
    for p in PRESETS.values():
        q = p.tables["queue"]
        lease = q.get("visibility_timeout_s")
        lines.append(f"{p.name:<17} {q['redelivery']:<19} lease {_num(lease) + ' s' if lease else '-':<9} {p.summary}")
    lines.append("acksim presets NAME prints every default of one preset with its source.")
    return "\n".join(lines)
