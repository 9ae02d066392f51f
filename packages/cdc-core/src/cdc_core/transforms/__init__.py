"""Single message transforms: Kafka Connect's and Debezium's SMTs on cdc's records."""
