"""Matching a client's error text to a Kafka error code, whichever way the library spells it."""

from __future__ import annotations


#: Kafka's own message for an error code (Errors.java), which librdkafka prints ("Broker: <message>")
#: where it wraps the code in another one (e.g. inside _FATAL).
ERROR_MESSAGES = {
    "GROUP_ID_NOT_FOUND": "The group id does not exist",
    "INCONSISTENT_GROUP_PROTOCOL": "supported protocols are incompatible with those of existing members",
    "GROUP_MAX_SIZE_REACHED": "The group has reached its maximum size",
    "GROUP_AUTHORIZATION_FAILED": "Group authorization failed",
    "TOPIC_AUTHORIZATION_FAILED": "Topic authorization failed",
}


def error_is(error: str | None, code: str) -> bool:
    """Whether a client's error text names Kafka error `code` (e.g. INVALID_RECORD_STATE), as
    librdkafka names it, as the Java client does (InvalidRecordStateException), or by Kafka's
    message for it."""
    if not error:
        return False
    flat = error.upper().replace("_", "")
    message = ERROR_MESSAGES.get(code.upper())
    return code.upper().replace("_", "") in flat or (message is not None and message.lower() in error.lower())
