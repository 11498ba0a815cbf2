"""The Kafka side of the data path: the Spark source, log probes, range reading, offsets, value
decoding, start positions, topic creation, the history guard and transactional writes."""
