"""The table side of the data path: the compacted Delta table, the dead-letter table, and reading
tables back (snapshots and the input offsets each commit reflects)."""
