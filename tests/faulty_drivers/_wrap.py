"""What several faulty drivers share: the confluent-kafka driver with each consumer it makes replaced by a wrapper
(`Wrapped`: the methods a bug changes, every other call the library's own), or its start config changed first."""

from harness.clients import confluent_share_driver as d


class Wrapped:
    """`consumer` with `methods` (name -> function) in place of its own."""

    def __init__(self, consumer, **methods) -> None:
        self._consumer = consumer
        self.__dict__.update(methods)

    def __getattr__(self, name):
        return getattr(self._consumer, name)


def run(wrap=None, change_config=None) -> int:
    """Run the confluent driver (its `main`) with every consumer it makes passed through `wrap(consumer, config)`
    and its start config and mode through `change_config(config, explicit)`, which returns the (config, explicit)
    the consumer is made with."""
    original = d._subscribed

    def subscribed(config, explicit, start, subscribe=True):
        if change_config is not None:
            config, explicit = change_config(config, explicit)
        consumer = original(config, explicit, start, subscribe)
        return consumer if wrap is None else wrap(consumer, config)
    d._subscribed = subscribed
    import sys
    return d.main(sys.argv)


def run_ignoring_poll_field(field: str) -> int:
    """Run the confluent driver with `poll_once`'s `field` (contract 4: `wakeup_after`, `interrupt_after`) dropped, the
    step's reply saying it was carried out (`<name>_sent`): a library whose second thread's call does not reach a poll
    already blocking."""
    step = d._step

    def ignoring(consumer, cmd, command, given):
        if cmd == "poll_once" and field in command:
            return {**step(consumer, cmd, {k: v for k, v in command.items() if k != field}, given),
                    field.replace("_after", "_sent"): True}
        return step(consumer, cmd, command, given)
    d._step = ignoring
    import sys
    return d.main(sys.argv)
