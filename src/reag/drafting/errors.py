"""Errors of the requirements front end, each naming what the user can fix."""

from __future__ import annotations


class SpecError(Exception):
    """Base class of every error ``reag.drafting`` raises."""


class TemplateError(SpecError):
    """An unknown template name, or a template data file that does not parse."""


class DocumentFormatError(SpecError):
    """An SRS file (Markdown or CSV) that cannot be read as an SRS."""


class FeedbackError(SpecError):
    """Human-feedback mode was asked for without any reviewer feedback."""


class MetricUnavailableError(SpecError):
    """A metric cannot run here (a missing resource or library); the message says why."""
