"""The conversation engine behind every door (sans-I/O) and the tracks as objects
(docs/design.md, "One engine"). Notebook-inlinable: imports ``core``, ``code`` and ``oracle``."""
