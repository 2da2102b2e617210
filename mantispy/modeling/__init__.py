"""Model generation: SPORE sparse polynomial regression over program features (paper §4)."""
