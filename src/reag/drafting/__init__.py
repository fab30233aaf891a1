"""The requirements front end: Agent4RE agents that draft an SRS from a brief, and its evaluation.

Each agent (orchestrator, interviewer, stakeholder, generator, refactor) is a
plain object around an ``LLMClient``; ``draft_spec`` runs them in one of the
three modes; ``reag.drafting.evaluation`` compares a generated SRS with a
reference. Nothing here knows about Kafka.
"""

from reag.drafting.document import NOT_SPECIFIED, SrsDocument, SrsRow
from reag.drafting.errors import (
    DocumentFormatError,
    FeedbackError,
    MetricUnavailableError,
    SpecError,
    TemplateError,
)
from reag.drafting.generator import Generator
from reag.drafting.interview import Elicitation, Interviewer, Stakeholder, run_elicitation
from reag.drafting.orchestrator import Orchestrator
from reag.drafting.refactor import ImprovementCommand, Refactor
from reag.drafting.runlog import RunLog
from reag.drafting.settings import AgentSettings, SpecSettings
from reag.drafting.template import Leaf, Template, load_template
from reag.drafting.workflow import DraftResult, Mode, SpecTeam, draft_spec

__all__ = [
    "NOT_SPECIFIED",
    "AgentSettings",
    "DocumentFormatError",
    "DraftResult",
    "Elicitation",
    "FeedbackError",
    "Generator",
    "ImprovementCommand",
    "Interviewer",
    "Leaf",
    "MetricUnavailableError",
    "Mode",
    "Orchestrator",
    "Refactor",
    "RunLog",
    "SpecError",
    "SpecSettings",
    "SpecTeam",
    "SrsDocument",
    "SrsRow",
    "Stakeholder",
    "Template",
    "TemplateError",
    "draft_spec",
    "load_template",
    "run_elicitation",
]
