"""Client properties for the SASL/PLAIN listener of a cluster that has one, per client library."""

from __future__ import annotations


def sasl_client_config(client: str, user: str, password: str) -> dict[str, str]:
    """Client properties to authenticate as `user` with SASL/PLAIN: librdkafka's names for the
    confluent client, a JAAS line for the Java clients."""
    common = {"security.protocol": "SASL_PLAINTEXT", "sasl.mechanism": "PLAIN"}
    if client in ("java", "spring"):  # (the spring driver runs KafkaShareConsumer)
        return {**common, "sasl.jaas.config": "org.apache.kafka.common.security.plain.PlainLoginModule "
                                              f'required username="{user}" password="{password}";'}
    return {**common, "sasl.username": user, "sasl.password": password}
