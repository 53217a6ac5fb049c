"""ButterflyBench inside inspect-ai (docs/inspect.md): the tasks ``butterflybench/butterfly_40``,
``butterfly_hard``, ``butterfly_long`` (and ``butterfly_suite`` for any suite file), the scorer
``butterfly_scorer`` with its metrics, and the model provider ``butterfly/script/NAME`` (our
scripted agents). Installed with the extra ``inspect``; inspect finds them through the package's
entry point (``butterflybench._registry``).

This package imports ``butterfly``; ``butterfly`` never imports it (nor inspect_ai), so only
what runs inside inspect pays for inspect.
"""

from __future__ import annotations

from butterflybench.offline import tiktoken_offline

tiktoken_offline()
