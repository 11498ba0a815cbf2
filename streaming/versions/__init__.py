"""The version lifecycle: the live pointer, side-by-side alignment, code pins, comparison and
promotion, the sensors' decisions, the overview, retention and retiring."""
