"""Analyses over runs: scoring, flips, audit, compare, calibrate, sequential, regress."""
