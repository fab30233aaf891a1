"""The requirements front end: Agent4RE agents that draft an SRS from a brief, and its evaluation.

Each agent (orchestrator, interviewer, stakeholder, generator, refactor) is a
plain object around an ``LLMClient``; ``draft_spec`` runs them in one of the
three modes; ``reag.spec.evaluation`` compares a generated SRS with a
reference. Nothing here knows about Kafka.
"""

from reag.spec.document import NOT_SPECIFIED, SrsDocument, SrsRow
from reag.spec.errors import (
    DocumentFormatError,
    FeedbackError,
    MetricUnavailableError,
    SpecError,
    TemplateError,
)
from reag.spec.generator import Generator
from reag.spec.interview import Elicitation, Interviewer, Stakeholder, run_elicitation
from reag.spec.orchestrator import Orchestrator
from reag.spec.refactor import ImprovementCommand, Refactor
from reag.spec.runlog import RunLog
from reag.spec.settings import AgentSettings, SpecSettings
from reag.spec.template import Leaf, Template, load_template
from reag.spec.workflow import DraftResult, Mode, SpecTeam, draft_spec

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
