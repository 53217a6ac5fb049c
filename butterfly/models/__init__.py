"""The seam to anything that answers: providers, client, cache, registry."""
