"""What tests and benchmarks share: private settings and ports, producing known records, and an
independent plain-Python reference replay of the topics."""
