"""ButterflyBench harness: generate, prompt, call models, parse, score, report."""

__version__ = "0.1.0"
