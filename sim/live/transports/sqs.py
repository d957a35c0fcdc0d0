"""SQS (moto): ``ReceiveMessage`` / ``DeleteMessage`` / ``ChangeMessageVisibility`` with a
``RedrivePolicy`` (``maxReceiveCount``) to a dead-letter queue. The visibility timeout is
whole seconds: the scaled value is rounded (at least 1 s) and the rounding reported.

All times here are wall seconds.
"""

from __future__ import annotations

import json
import time

from acksim.live.transports.base import Received, Transport

SQS_QUEUE, SQS_DLQ = "acksim-jobs", "acksim-dead-letter"


class SqsTransport(Transport):
    """An SQS standard queue (moto) with a redrive policy to a dead-letter queue."""

    name = "sqs"
    mechanism = ("ReceiveMessage / DeleteMessage / ChangeMessageVisibility, ApproximateReceiveCount, "
                 "RedrivePolicy maxReceiveCount to a dead-letter queue")

    def __init__(self, endpoint_url: str, visibility_s: float, max_receive_count: int, namespace: str = "") -> None:
        whole = max(1, int(round(visibility_s)))
        super().__init__(float(whole), max_receive_count, namespace)
        self.endpoint_url = endpoint_url
        self.queue_url = self.dlq_url = ""
        if whole != visibility_s:
            self.notes.append(f"SQS visibility timeout is whole seconds: {visibility_s:g} wall s rounded to {whole} s")
        self._client = None
        self._dead: set[int] = set()

    def __getstate__(self):
        return {"endpoint_url": self.endpoint_url, "visibility_s": self.visibility_s,
                "max_receive_count": self.max_receive_count, "notes": self.notes, "namespace": self.namespace,
                "queue_url": self.queue_url, "dlq_url": self.dlq_url}

    def __setstate__(self, state):
        self.__dict__.update(state)
        self._client, self._dead = None, set()

    def client(self):
        from acksim.live.brokers.sqs import sqs_client

        return sqs_client(self.endpoint_url)

    def declare(self) -> None:
        """Create the dead-letter queue and the job queue with its redrive policy."""
        c = self._client = self.client()
        self.dlq_url = c.create_queue(QueueName=self.named(SQS_DLQ, "-"))["QueueUrl"]
        attrs = {"VisibilityTimeout": str(int(self.visibility_s))}
        if self.max_receive_count:
            arn = c.get_queue_attributes(QueueUrl=self.dlq_url, AttributeNames=["QueueArn"])["Attributes"]["QueueArn"]
            attrs["RedrivePolicy"] = json.dumps({"deadLetterTargetArn": arn,
                                                 "maxReceiveCount": str(self.max_receive_count)})
        self.queue_url = c.create_queue(QueueName=self.named(SQS_QUEUE, "-"), Attributes=attrs)["QueueUrl"]

    def publish(self, body: str) -> None:
        self._client.send_message(QueueUrl=self.queue_url, MessageBody=body)

    def lost_connection(self, exc: BaseException) -> bool:
        """botocore's HTTP client errors (connection refused, closed, timed out)."""
        from botocore.exceptions import HTTPClientError

        return isinstance(exc, (HTTPClientError, ConnectionError))

    def poll_dead_letters(self) -> list[int]:
        """Message ids newly in the dead-letter queue (received with a long visibility, never
        deleted, each reported once)."""
        got = self._client.receive_message(QueueUrl=self.dlq_url, MaxNumberOfMessages=10, VisibilityTimeout=3600)
        out = []
        for m in got.get("Messages", []):
            mid = json.loads(m["Body"])["message_id"]
            if mid not in self._dead:
                self._dead.add(mid)
                out.append(mid)
        return out

    def dead_letter_ids(self) -> list[int]:
        self.poll_dead_letters()
        return sorted(self._dead)

    def drop(self) -> None:
        """DeleteQueue both queues."""
        if self._client is not None:
            for url in (self.queue_url, self.dlq_url):
                if url:
                    self._client.delete_queue(QueueUrl=url)

    def close(self) -> None:
        pass

    def consumer(self, name: str) -> "SqsConsumer":
        return SqsConsumer(self)


class SqsConsumer:
    """One worker's SQS client."""

    def __init__(self, t: SqsTransport) -> None:
        self.t = t
        self.c = t.client()

    def receive(self, timeout_s: float) -> Received | None:
        """One ReceiveMessage (no long poll; sleeps ``timeout_s`` when the queue is empty)."""
        got = self.c.receive_message(QueueUrl=self.t.queue_url, MaxNumberOfMessages=1,
                                     AttributeNames=["ApproximateReceiveCount"])
        msgs = got.get("Messages", [])
        if not msgs:
            time.sleep(timeout_s)
            return None
        m = msgs[0]
        body = json.loads(m["Body"])
        return Received(body["message_id"], body, int(m["Attributes"]["ApproximateReceiveCount"]), m["ReceiptHandle"])

    def ack(self, d: Received) -> bool:
        self.c.delete_message(QueueUrl=self.t.queue_url, ReceiptHandle=d.handle)
        return True

    def nack(self, d: Received, backoff_s: float) -> None:
        self.c.change_message_visibility(QueueUrl=self.t.queue_url, ReceiptHandle=d.handle,
                                         VisibilityTimeout=max(0, int(round(backoff_s))))

    def close(self) -> None:
        pass
