"""Errors of the judging core, each telling the user what to change."""

from __future__ import annotations


class JudgingError(Exception):
    """Base of every error raised by ``reag.judging``."""


class JudgeConfigError(JudgingError):
    """Annotator count, examples per annotator or sampling settings are out of range."""


class LabelProbsError(JudgingError):
    """The LLM layer returned label probabilities the judge cannot use."""
