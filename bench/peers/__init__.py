"""``make bench-peers``: the platform side by side with the engines a user would pick instead.

The same four workloads run, on the same Kafka log, through the platform (``python -m streaming
run PIPELINE``), Kafka Streams (a Java application compiled at first use), Quix Streams (in a
virtual environment of its own) and Spark's own Structured Streaming operators where they apply.
Each run's output is checked against a plain-Python reference before its figures count.

- ``workloads``: the events of each workload, deterministic, in order or disordered;
- ``producing``: topics made afresh, a log written as fast as possible or at a fixed rate;
- ``reference``: the exact answer on a log, in plain Python, sharing no code with the engines;
- ``outputs``: each engine's output read back and compared with the reference;
- ``progress``: how far each engine's output covers its input, seen from outside;
- ``engines``, ``kafka_streams``, ``quix_env``, ``quix_app``, ``spark_app``: the engines;
- ``runs``: one measured run (cold, or at a fixed rate);
- ``semantics``: where the engines' answers differ on disordered data;
- ``report``: the table, the ratios, the targets and the JSON.
"""
