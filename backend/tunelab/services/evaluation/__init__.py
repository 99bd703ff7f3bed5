"""Studies and evaluation: studies (grids of runs) and their cost table, and the playground that compares a run's
model with its base."""
