"""The LLM layer: one interface to every model reag uses (see ``base`` and ``client``)."""

from reag.llm.base import (
    BudgetExceededError,
    CapabilityError,
    ChatResult,
    ContinuationScore,
    LabelProbs,
    LLMError,
    Message,
    PermanentLLMError,
    Provider,
    StructuredOutputError,
    TransientLLMError,
    Usage,
)
from reag.llm.client import Caller, LLMClient, StructuredResult

__all__ = [
    "BudgetExceededError",
    "Caller",
    "CapabilityError",
    "ChatResult",
    "ContinuationScore",
    "LLMClient",
    "LLMError",
    "LabelProbs",
    "Message",
    "PermanentLLMError",
    "Provider",
    "StructuredOutputError",
    "StructuredResult",
    "TransientLLMError",
    "Usage",
]
