"""One self-contained HTML page per run: what the ledger decided and what it cost.

The page is for people who would rather look than read a Markdown table; it
needs no network (inline CSS, inline SVG, charts as data-URI PNGs, a Content
Security Policy that forbids scripts and fetches), so it can be mailed,
attached to a CI job or opened on an air-gapped laptop.
"""

from reag.report.html import ReportInputs, render_run_report

__all__ = ["ReportInputs", "render_run_report"]
