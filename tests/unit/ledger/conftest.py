"""Event builders and stores for ledger tests (SQLite always, PostgreSQL when marked).

The integration tests load this module too (``tests/integration/ledger/conftest.py``),
so the events they publish are built the same way.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator, Sequence
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from sqlalchemy import text

from reag.ledger.store import LedgerStore
from reag.storage import make_engine
from reag.v1 import events_pb2 as pb

POSTGRES_DSN = "postgresql+psycopg://postgres@127.0.0.1:5432/test"
TIER_COSTS = (0.001, 0.003, 0.0046)
YES, NO = pb.LABEL_YES, pb.LABEL_NO


class Events:
    """Events of one test case, shaped as the judges and the oracle service publish them."""

    def __init__(
        self,
        case_id: str = "nutrition-0001",
        app: str = "nutrition",
        run_id: str = "run-1",
        n: int = 3,
    ) -> None:
        self.case_id, self.app, self.run_id, self.n = case_id, app, run_id, n

    def meta(self) -> pb.EventMeta:
        meta = pb.EventMeta(
            case_id=self.case_id,
            app=self.app,
            run_id=self.run_id,
            schema_version=pb.SCHEMA_VERSION_1,
            origin=pb.ORIGIN_SYNTHETIC,
        )
        meta.created_at.FromDatetime(datetime(2026, 1, 1, tzinfo=UTC))
        return meta

    def cid(self, index: int) -> str:
        return f"{self.case_id}/c{index}"

    def criterion(self, index: int) -> pb.Criterion:
        return pb.Criterion(
            criterion_id=self.cid(index), index=index, text=f"The answer respects rule {index}."
        )

    def oracle(self) -> pb.Oracle:
        oracle = pb.Oracle(
            meta=self.meta(),
            oracle_id=f"{self.case_id}/oracle",
            test_objective="Check the meal plan.",
            expected_results="A plan.",
        )
        oracle.criteria.extend(self.criterion(i) for i in range(self.n))
        intention = oracle.interpretation.intention
        intention.query = "What should I eat tonight?"
        intention.persona.category_id, intention.persona.category_name = "p1", "diabetic"
        oracle.interpretation.documents.add(doc_id="requirement/r1", content="x" * 500)
        return oracle

    def attempts(
        self, tiers: Sequence[int], labels: Sequence[pb.Label.ValueType], last_accepted: bool
    ) -> list[pb.TierAttempt]:
        out = []
        for position, (tier, label) in enumerate(zip(tiers, labels, strict=True)):
            last = position == len(tiers) - 1
            out.append(
                pb.TierAttempt(
                    tier=tier,
                    model=f"model-{tier}",
                    verdict=label,
                    confidence=0.6 + 0.1 * tier,
                    has_threshold=True,
                    threshold=0.9,
                    cost_usd=TIER_COSTS[tier - 1],
                    method="logprobs",
                    accepted=last and last_accepted,
                )
            )
        return out

    def verdict(self, index: int, label: pb.Label.ValueType, tier: int = 1) -> pb.Verdict:
        history = self.attempts(range(1, tier + 1), [label] * tier, last_accepted=True)
        verdict = pb.Verdict(
            meta=self.meta(),
            criterion_id=self.cid(index),
            oracle_id=f"{self.case_id}/oracle",
            n_criteria=self.n,
            label=label,
            tier=tier,
            confidence=history[-1].confidence,
            threshold=0.9,
            cumulative_cost_usd=sum(a.cost_usd for a in history),
            criterion=self.criterion(index),
        )
        verdict.history.extend(history)
        verdict.evidence.add(doc_id="requirement/r1", sentence="Plans fit the diet.", why="rule")
        return verdict

    def request(self, index: int) -> pb.JudgeRequest:
        request = pb.JudgeRequest(
            meta=self.meta(),
            criterion=self.criterion(index),
            oracle_id=f"{self.case_id}/oracle",
            n_criteria=self.n,
            query="What should I eat tonight?",
            actual_response="Pasta with cream.",
            test_objective="Check the meal plan.",
            expected_results="A plan.",
        )
        request.persona.category_id, request.persona.category_name = "p1", "diabetic"
        request.persona.description = "Type 2 diabetic, cooks at home."
        request.evidence.add(doc_id="requirement/r1", sentence="Plans fit the diet.", why="rule")
        return request

    def abstain(self, index: int) -> pb.Abstain:
        request = self.request(index)
        request.history.extend(self.attempts((1, 2, 3), (YES, NO, YES), last_accepted=False))
        return pb.Abstain(
            meta=self.meta(),
            request=request,
            reason="no tier was confident",
            cumulative_cost_usd=sum(TIER_COSTS),
        )

    def review(
        self,
        index: int,
        label: pb.Label.ValueType,
        reviewer: str = "ann",
        minutes: int = 0,
        comment: str = "",
    ) -> pb.Review:
        review = pb.Review(
            meta=self.meta(),
            criterion_id=self.cid(index),
            label=label,
            reviewer=reviewer,
            comment=comment,
            item=self.request(index),
        )
        review.reviewed_at.FromDatetime(
            datetime(2026, 1, 2, tzinfo=UTC) + timedelta(minutes=minutes)
        )
        return review


@pytest.fixture
def ev() -> Events:
    return Events()


@pytest.fixture
def sqlite_dsn(tmp_path: Path) -> str:
    return f"sqlite:///{tmp_path / 'ledger.db'}"


@pytest.fixture
def postgres_store() -> Iterator[LedgerStore]:
    """A store in a schema of its own, dropped afterwards, so tests never see each other."""
    schema = f"t_{uuid.uuid4().hex[:12]}"
    admin = make_engine(POSTGRES_DSN)
    with admin.begin() as conn:
        conn.execute(text(f'CREATE SCHEMA "{schema}"'))
    store = LedgerStore(admin.execution_options(schema_translate_map={None: schema}))
    try:
        yield store
    finally:
        with admin.begin() as conn:
            conn.execute(text(f'DROP SCHEMA "{schema}" CASCADE'))
        admin.dispose()


@pytest.fixture(params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def store(request: pytest.FixtureRequest, sqlite_dsn: str) -> Iterator[LedgerStore]:
    if request.param == "sqlite":
        opened = LedgerStore.open(sqlite_dsn)
        yield opened
        opened.close()
    else:
        yield request.getfixturevalue("postgres_store")
