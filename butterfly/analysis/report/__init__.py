"""The report's data (``butterfly report``): every figure the page shows, computed before any
markup. ``report_data(runs) -> ReportData`` (``build``), the records (``data``), the headline's
and the charts' figures (``figures``), the compare section (``findings``), the transcripts as
the page carries them (``pages``); ``present/report.py`` renders it."""

from butterfly.analysis.report.build import report_data
from butterfly.analysis.report.data import ReportData

__all__ = ["ReportData", "report_data"]
