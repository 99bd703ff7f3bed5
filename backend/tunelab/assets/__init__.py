"""Small models and sample datasets generated offline, so that Tunelab works without any download."""
