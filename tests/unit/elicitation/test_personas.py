"""Mapping live profiles onto persona categories: hint, keywords, closest, never a crash."""

from __future__ import annotations

from pathlib import Path

import pytest

from reag.corpus.loader import load_file
from reag.corpus.model import Document
from reag.elicitation.directory import PersonaDirectory
from reag.elicitation.intentions import intention_from_traffic
from reag.elicitation.personas import (
    FALLBACK_CEILING,
    NoPersonaCategoriesError,
    PersonaCategory,
    PersonaMatcher,
    categories_from_documents,
)
from reag.v1 import events_pb2 as pb

EXAMPLE_PERSONAS = Path(__file__).parents[3] / "examples/nutrition/corpus/personas.yaml"


def persona(local_id: str, title: str, content: str, keywords: list[str]) -> Document:
    return Document(
        app="demo",
        kind="persona",
        local_id=local_id,
        title=title,
        content=content,
        source="personas.yaml",
        metadata={"keywords": keywords},
    )


DOCS = [
    persona(
        "t2d",
        "Type 2 diabetes",
        "Adults managing blood glucose with metformin.",
        ["diabetes", "metformin", "blood pressure"],
    ),
    persona(
        "ckd",
        "Chronic kidney disease",
        "Adults on a renal diet, some on dialysis.",
        ["kidney", "dialysis", "blood pressure"],
    ),
    persona(
        "athlete",
        "Athlete in training",
        "Endurance runners and cyclists who train daily.",
        ["marathon", "cyclist", "training"],
    ),
]


@pytest.fixture
def matcher() -> PersonaMatcher:
    return PersonaMatcher(categories_from_documents(DOCS))


@pytest.mark.parametrize(
    "hint", ["ckd", "CKD", "persona/ckd", "Chronic kidney disease", "chronic-kidney-disease"]
)
def test_a_hint_that_names_a_category_wins_with_score_one(
    matcher: PersonaMatcher, hint: str
) -> None:
    # The description points at another category: the hint still decides.
    match = matcher.match(pb.UserProfile(persona_hint=hint, description="marathon runner"))
    assert (match.category.id, match.score, match.method) == ("ckd", 1.0, "hint")


def test_a_hint_that_names_no_category_is_read_as_profile_text(matcher: PersonaMatcher) -> None:
    match = matcher.match(pb.UserProfile(persona_hint="diabetic, takes metformin"))
    assert match.category.id == "t2d"
    assert match.method == "keywords"
    assert 0.5 < match.score < 1.0


def test_keywords_in_attributes_and_description_pick_the_category(
    matcher: PersonaMatcher,
) -> None:
    match = matcher.match(pb.UserProfile(attributes={"treatment": "Haemo DIALYSIS 3x/week"}))
    assert match.category.id == "ckd"
    assert match.matched_keywords == ("dialysis",)


def test_a_keyword_many_categories_share_weighs_less_than_a_distinctive_one(
    matcher: PersonaMatcher,
) -> None:
    shared = matcher.match(pb.UserProfile(description="worried about my blood pressure"))
    distinctive = matcher.match(pb.UserProfile(description="training for a marathon"))
    assert shared.method == distinctive.method == "keywords"
    assert shared.score < distinctive.score
    # Two categories list "blood pressure": the runner-up is reported, the tie goes to corpus order.
    assert (shared.category.id, shared.runner_up and shared.runner_up.id) == ("t2d", "ckd")


def test_keywords_match_whole_words_only(matcher: PersonaMatcher) -> None:
    match = matcher.match(pb.UserProfile(description="I love diabetescake and kidneybeans"))
    assert match.method == "closest"


def test_an_unmatched_profile_gets_the_closest_category_with_a_low_score(
    matcher: PersonaMatcher,
) -> None:
    match = matcher.match(pb.UserProfile(description="I run with cyclists on weekends"))
    assert match.method == "closest"
    assert match.category.id == "athlete"  # "cyclists" is not the keyword "cyclist"
    assert 0 < match.score < FALLBACK_CEILING


@pytest.mark.parametrize(
    "profile",
    [pb.UserProfile(), pb.UserProfile(description="zzz qqq"), pb.UserProfile(persona_hint="   ")],
)
def test_empty_or_meaningless_profiles_never_crash(
    matcher: PersonaMatcher, profile: pb.UserProfile
) -> None:
    match = matcher.match(profile)
    assert match.category in matcher.categories
    assert match.score == 0.0


def test_an_app_without_persona_documents_is_a_clear_error() -> None:
    with pytest.raises(NoPersonaCategoriesError, match="reag corpus add"):
        PersonaMatcher([])


def test_every_example_category_is_reachable_by_its_id_and_by_one_of_its_keywords() -> None:
    categories = categories_from_documents(load_file(EXAMPLE_PERSONAS, "nutrition"))
    matcher = PersonaMatcher(categories)
    assert len(categories) >= 10
    for category in categories:
        assert matcher.match(pb.UserProfile(persona_hint=category.id)).category == category
        own = [
            k
            for k in category.keywords
            if matcher.match(pb.UserProfile(description=k)).category == category
        ]
        assert own, f"no keyword of {category.id} maps back to it"


def test_the_intention_keeps_the_traffic_ids_and_describes_this_user(
    matcher: PersonaMatcher,
) -> None:
    traffic = pb.Traffic(
        query="Can I drink this?",
        actual_response="Yes.",
        situation="After a walk.",
        request_id="r1",
        profile=pb.UserProfile(description="On dialysis since 2021", attributes={"age": "71"}),
    )
    traffic.meta.case_id, traffic.meta.app, traffic.meta.schema_version = "c1", "demo", 1
    traffic.meta.run_id = "run-1"
    intention, match = intention_from_traffic(traffic, matcher)
    assert intention.meta == traffic.meta
    assert (
        intention.query,
        intention.situation,
        intention.actual_response,
        intention.request_id,
    ) == ("Can I drink this?", "After a walk.", "Yes.", "r1")
    assert intention.persona.category_id == "ckd"
    assert intention.persona.category_name == "Chronic kidney disease"
    assert intention.persona.match_score == pytest.approx(match.score, abs=1e-4)
    assert intention.persona.description == "On dialysis since 2021\nage: 71"


def test_a_profile_with_no_details_is_described_by_its_category(matcher: PersonaMatcher) -> None:
    traffic = pb.Traffic(query="q", actual_response="r", profile=pb.UserProfile(persona_hint="ckd"))
    intention, _ = intention_from_traffic(traffic, matcher)
    assert intention.persona.description == DOCS[1].content


def test_keywords_may_come_as_a_comma_separated_string() -> None:
    document = Document(
        app="a",
        kind="persona",
        local_id="v",
        title="Vegan",
        content="Plant only.",
        source="s",
        metadata={"keywords": "vegan, plant-based", "conditions": []},
    )
    assert PersonaCategory.from_document(document).keywords == ("vegan", "plant-based")


def test_the_directory_caches_per_app_for_its_ttl() -> None:
    now = [0.0]
    reads: list[str] = []

    def list_personas(app: str) -> list[Document]:
        reads.append(app)
        return DOCS if app == "demo" else []

    directory = PersonaDirectory(
        list_personas, lambda app: app == "demo", ttl_s=10, clock=lambda: now[0]
    )
    assert directory.knows("demo")
    assert not directory.knows("other")
    assert not directory.knows("")
    first = directory.matcher("demo")
    assert first is not None
    assert directory.matcher("demo") is first
    assert directory.matcher("other") is None
    now[0] = 11.0
    assert directory.matcher("demo") is not first
    assert reads == ["demo", "other", "demo"]
