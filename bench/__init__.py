"""Benchmarks and the fault-injection harness: ``make bench`` and ``make faults``."""
