"""The LLM layer: one interface to every model reag uses (see ``base`` and ``client``).

Get a client with ``reag.llm.registry.make_client(model, caller=Caller(service, tier))``.
"""

from reag.llm.accounting import CostLedger, Totals, default_ledger
from reag.llm.base import (
    BatchLabelProvider,
    BudgetExceededError,
    CapabilityError,
    ChatResult,
    ConfigurationError,
    ContinuationScore,
    InvalidRequestError,
    LabelParseError,
    LabelProbs,
    LLMError,
    LLMTimeoutError,
    Message,
    PermanentLLMError,
    Provider,
    RateLimitedError,
    StructuredOutputError,
    TransientLLMError,
    Usage,
)
from reag.llm.client import Caller, LLMClient, StructuredResult
from reag.llm.settings import LLMSettings

__all__ = [
    "BatchLabelProvider",
    "BudgetExceededError",
    "Caller",
    "CapabilityError",
    "ChatResult",
    "ConfigurationError",
    "ContinuationScore",
    "CostLedger",
    "InvalidRequestError",
    "LLMClient",
    "LLMError",
    "LLMSettings",
    "LLMTimeoutError",
    "LabelParseError",
    "LabelProbs",
    "Message",
    "PermanentLLMError",
    "Provider",
    "RateLimitedError",
    "StructuredOutputError",
    "StructuredResult",
    "Totals",
    "TransientLLMError",
    "Usage",
    "default_ledger",
]
