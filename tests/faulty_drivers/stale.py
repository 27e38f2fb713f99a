"""Faulty driver: fetches in the background while the application does not poll, buffers what it
acquired, and hands the buffer out at the next poll however old it is (no look at the acquisition locks):
records whose locks expired, which another consumer may hold by then. Certification must fail rule
`no-stale-records`. (In implicit mode its background poll also accepts the previous batch before the driver
prints that acknowledgement: other rules may fail it for that too; `breaks` names the rule of its class.)"""

import sys
import threading

from harness.clients import confluent_share_driver as d

lock = threading.RLock()  # the client is called by one thread at a time: a step, or the fetcher between steps
buffer: list = []
stop = threading.Event()
#: set between an `ack` step and the commit that sends it: the fetcher does not poll then, or its ShareFetch would
#: carry the acknowledgement and leave the application's commit nothing to report (its bug is the stale buffer,
#: not a commit that reports nothing; a certification then found the rule's set-up not held: inconclusive)
acks_pending = threading.Event()


def fetch_in_background(consumer):
    while not stop.wait(0.1):
        with lock:
            if buffer or stop.is_set() or acks_pending.is_set():
                continue
            try:  # refused while the application holds records unacknowledged (explicit mode): fine
                buffer.extend(m for m in consumer.poll(0.2) if m.error() is None)
            except Exception:
                pass


class _Background:
    def __init__(self, consumer):
        self._consumer = consumer

    def __getattr__(self, name):
        return getattr(self._consumer, name)

    def close(self):
        stop.set()
        with lock:
            return self._consumer.close()


_subscribed, _poll_batch, _step = d._subscribed, d._poll_batch, d._step


def subscribed(*args, **kwargs):
    consumer = _subscribed(*args, **kwargs)
    if not stepping:  # (the workload behaviours poll from one loop of their own: left alone)
        return consumer
    threading.Thread(target=fetch_in_background, args=(consumer,), daemon=True).start()
    return _Background(consumer)


stepping = False
_run_steps = d.run_steps


def run_steps(*args, **kwargs):
    global stepping
    stepping = True
    return _run_steps(*args, **kwargs)


def poll_batch(consumer, timeout):
    with lock:
        if buffer:  # the buffer, as it is: no check of its locks
            records = buffer[:]
            buffer.clear()
            d.emit("ok", "poll", {"records": [
                {"id": d._id(m), "topic": m.topic(), "partition": m.partition(), "offset": m.offset(),
                 "delivery_count": m.delivery_count()} for m in records]})
            return records
    return _poll_batch(consumer, timeout)


def step(consumer, cmd, command, given):
    with lock:
        if cmd == "ack":
            acks_pending.set()
        elif cmd in ("commit_sync", "commit_async"):
            acks_pending.clear()
        return _step(consumer, cmd, command, given)


d._subscribed, d._poll_batch, d._step, d.run_steps = subscribed, poll_batch, step, run_steps
sys.exit(d.main(sys.argv))
