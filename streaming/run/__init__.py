"""Running a deployment: start-up, the streaming query and its micro-batches, the Spark session,
health, reporting and the one-copy lock."""
