"""Invariant checkers, and the randomized many-writers checker that drives them."""
