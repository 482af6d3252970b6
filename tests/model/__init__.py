"""Model tests: the pure core only."""
