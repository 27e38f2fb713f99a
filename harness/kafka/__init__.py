"""Getting Kafka: version profiles, jars (Maven Central or KAFKA_HOME), server.properties."""
