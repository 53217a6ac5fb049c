"""Presentation: terminal display, show, and the HTML report with its templates."""
