"""The version lifecycle: the live pointer, side-by-side alignment, comparison and promotion,
the sensors' decisions, the overview, retention and retiring."""
