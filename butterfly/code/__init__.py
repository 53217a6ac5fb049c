"""The code track (contract section 7): the spec kept as a program.

``catalogue`` (the code catalogue, pure), ``program`` (the reference renderer, pure: spec ->
``tool.py`` source), ``runner`` (runs a program in a child process; the sandbox will replace
it), ``probes`` (probe inputs and readings of output bytes) and ``extract`` (program -> observed
spec). docs/code-track.md describes each setting and how it is observed.
"""
