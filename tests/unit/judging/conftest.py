"""Builders shared by the judging unit tests (scripted providers only: mechanics, not quality)."""

from __future__ import annotations

from collections.abc import Callable, Sequence

import pytest

from reag.judging.exemplars import LabelledExample
from reag.llm.base import Message
from reag.llm.client import LLMClient
from reag.llm.scripted import FakeProvider
from reag.v1 import events_pb2 as pb

PERSONAS = ("t2d", "ckd", "celiac", "pregnant", "athlete")


def make_pool(n: int, personas: Sequence[str] = PERSONAS) -> list[LabelledExample]:
    """n examples cycling labels and personas, ids e00, e01, ..."""
    return [
        LabelledExample(
            item_id=f"e{i:02d}",
            label="YES" if i % 2 == 0 else "NO",
            persona_category=personas[(i // 2) % len(personas)],
            criterion=f"criterion {i:02d}",
            query=f"query {i:02d}",
            actual_response=f"response no. {i:02d}.",
        )
        for i in range(n)
    ]


def make_request(
    response: str = "Sugar 22 g per 100 g: high.",
    *,
    app: str = "nutrition",
    case: str = "case-1",
) -> pb.JudgeRequest:
    request = pb.JudgeRequest(
        criterion=pb.Criterion(
            criterion_id=f"{case}/c0",
            index=0,
            text="The response flags the product as high in sugar.",
        ),
        oracle_id=f"{case}/oracle",
        n_criteria=2,
        query="Is this cereal OK for me?",
        actual_response=response,
        persona=pb.Persona(category_id="t2d", category_name="Type 2 diabetes"),
        evidence=[pb.Evidence(doc_id="requirement/R-12", sentence="Flag sugars above 22.5 g.")],
        test_objective="Check sugar advice for a diabetic user.",
        expected_results="The app warns about sugar.",
    )
    request.meta.case_id, request.meta.app = case, app
    request.meta.schema_version = pb.SCHEMA_VERSION_1
    return request


LabelScript = Callable[[str | Sequence[Message], Sequence[str]], dict[str, float]]


def client_with(script: LabelScript | None = None, model: str = "fake:judge") -> LLMClient:
    return LLMClient(FakeProvider(model=model, label_script=script))


@pytest.fixture
def pool() -> list[LabelledExample]:
    return make_pool(40)
