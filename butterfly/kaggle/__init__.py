"""The Kaggle notebook: its build, and the Kaggle-side runner (the second seam)."""
