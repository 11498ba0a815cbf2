"""What tests and benchmarks share: private settings and ports, producing known records, an
independent plain-Python reference replay of the topics, and delta-spark as a reader of tables."""
