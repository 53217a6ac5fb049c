"""Suites as data: templates, generation, loading and the published JSON Schemas."""
