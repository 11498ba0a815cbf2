"""Running a deployment: start-up, the streaming query and its micro-batches, publishing its
changes, health and reporting."""
