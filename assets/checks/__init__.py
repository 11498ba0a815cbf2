"""Asset checks on the tables: deployment health, quality suites, candidate comparisons."""
