"""The annotators' example sets pinned per app, so every judge of an app builds one prompt.

A threshold only means something for the prompts it was fit on, and the live
judges and the calibrator run in different processes: each must find the
very same example sets.

A new app can borrow another app's sets (``lend_examples``): its judge then
has the lender's identity, so a threshold fitted on the lender's labelled
items holds for it as a provisional threshold (``reag.trust.provisional``,
issue 26) until its own audits certify or withdraw it. The loan stays: the
app's own labels, and any threshold later fitted on them, are then scored
with the same examples. The draw is deterministic (``exemplars``), but its
pool, the app's labelled items, keeps growing; so once the pool is large
enough the drawn sets are written down and read back from then on.

Drawing and pinning both live here, in ``reag.judging``, because the sets
are part of the judge's prompt (their digest is in the prompt version). The
calibration store only keeps the labelled items they are drawn from and
never sees an annotator: ``reag.calibration`` stays free of judging, and
``reag.judging`` reads the pool from it, so the two packages do not import
each other. The pins' table shares the store's database and sessions.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import cast

from sqlalchemy import Integer, String, Table, UniqueConstraint, select
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Mapped, Session, mapped_column, sessionmaker

from reag.calibration.store import CalibrationItem, CalibrationStore
from reag.judging.exemplars import AnnotatorSets, LabelledExample, draw_annotator_sets
from reag.storage import Base


class AnnotatorExampleRow(Base):
    __tablename__ = "judge_annotator_examples"
    __table_args__ = (
        UniqueConstraint(
            "app",
            "n_annotators",
            "k_examples",
            "seed",
            "annotator",
            "position",
            name="uq_annotator_example",
        ),
    )

    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    app: Mapped[str] = mapped_column(String(200), index=True)
    n_annotators: Mapped[int] = mapped_column(Integer)
    k_examples: Mapped[int] = mapped_column(Integer)
    seed: Mapped[int] = mapped_column(Integer)
    annotator: Mapped[int] = mapped_column(Integer)
    position: Mapped[int] = mapped_column(Integer)
    item_id: Mapped[str] = mapped_column(String(400))


class ExampleLoanRow(Base):
    __tablename__ = "judge_example_loans"

    app: Mapped[str] = mapped_column(String(200), primary_key=True)
    lender: Mapped[str] = mapped_column(String(200))


@dataclass(frozen=True, slots=True)
class _Pins:
    """What a pinned draw is keyed by: another N, K or seed is another draw."""

    app: str
    n: int
    k: int
    seed: int


def example_of(item: CalibrationItem) -> LabelledExample:
    """A labelled item as an annotator is shown it."""
    return LabelledExample(
        item_id=item.item_id,
        label=item.label,
        persona_category=item.persona_category,
        criterion=item.request.criterion.text,
        query=item.request.query,
        actual_response=item.request.actual_response,
        persona_name=item.request.persona.category_name,
        explanation=item.explanation,
    )


def pinned_annotator_sets(
    store: CalibrationStore, app: str, n_annotators: int, k_examples: int, seed: int
) -> AnnotatorSets:
    """The pinned sets of (app, N, K, seed), pinning a fresh draw when the pool allows.

    Sets are pinned once the pool holds N·K items (enough for disjoint
    sets); before that they are redrawn from the current pool each time,
    and their digest (hence the prompt version) changes as the pool grows.
    """
    sessions = store.sessions
    _ensure_table(sessions)
    lender = lender_of(store, app)
    if lender is not None:
        app = lender
    key = _Pins(app, n_annotators, k_examples, seed)
    items = {i.item_id: i for i in store.items(app)}
    pinned = _pinned(sessions, key)
    if pinned and all(item_id in items for s in pinned for item_id in s):
        return _sets(items, pinned)
    sets = draw_annotator_sets(
        [example_of(i) for i in items.values()], n_annotators, k_examples, seed
    )
    if len(items) >= n_annotators * k_examples and k_examples > 0:
        _pin(sessions, key, sets)
        return _sets(items, _pinned(sessions, key))
    return sets


def lend_examples(store: CalibrationStore, app: str, lender: str) -> None:
    """From now on ``app``'s judges show the examples ``lender``'s judges show."""
    if app == lender:
        raise ValueError(f"an app cannot borrow its own examples ({app!r})")
    _ensure_table(store.sessions)
    if lender_of(store, lender) is not None:
        raise ValueError(f"{lender!r} shows borrowed examples itself; lend from its lender")
    with store.sessions.begin() as session:
        row = session.get(ExampleLoanRow, app)
        if row is None:
            session.add(ExampleLoanRow(app=app, lender=lender))
        else:
            row.lender = lender


def lender_of(store: CalibrationStore, app: str) -> str | None:
    """The app whose example sets ``app`` borrows, or None (it shows its own)."""
    _ensure_table(store.sessions)
    with store.sessions() as session:
        row = session.get(ExampleLoanRow, app)
        return row.lender if row is not None else None


def _sets(items: dict[str, CalibrationItem], pinned: list[list[str]]) -> AnnotatorSets:
    return AnnotatorSets(sets=tuple(tuple(example_of(items[i]) for i in s) for s in pinned))


def _ensure_table(sessions: sessionmaker[Session]) -> None:
    """The store may have been opened before this module declared its table."""
    with sessions.begin() as session:
        for table in (AnnotatorExampleRow.__table__, ExampleLoanRow.__table__):
            cast(Table, table).create(session.connection(), checkfirst=True)


def _pinned(sessions: sessionmaker[Session], key: _Pins) -> list[list[str]]:
    with sessions() as session:
        rows = session.scalars(
            select(AnnotatorExampleRow)
            .where(
                AnnotatorExampleRow.app == key.app,
                AnnotatorExampleRow.n_annotators == key.n,
                AnnotatorExampleRow.k_examples == key.k,
                AnnotatorExampleRow.seed == key.seed,
            )
            .order_by(AnnotatorExampleRow.annotator, AnnotatorExampleRow.position)
        ).all()
    sets: dict[int, list[str]] = {}
    for row in rows:
        sets.setdefault(row.annotator, []).append(row.item_id)
    return [sets[a] for a in sorted(sets)]


def _pin(sessions: sessionmaker[Session], key: _Pins, sets: AnnotatorSets) -> None:
    try:
        with sessions.begin() as session:
            for annotator, examples in enumerate(sets.sets):
                for position, example in enumerate(examples):
                    session.add(
                        AnnotatorExampleRow(
                            app=key.app,
                            n_annotators=key.n,
                            k_examples=key.k,
                            seed=key.seed,
                            annotator=annotator,
                            position=position,
                            item_id=example.item_id,
                        )
                    )
    except IntegrityError:
        pass  # another process pinned first; its sets are read back by the caller
