"""The simulated-user agent A_user (REAG 3.1): realistic users within real persona categories.

Manually collecting profiles that cover the variation inside each persona
category (other circumstances, other constraints, another life stage) is too
expensive, so an LLM writes them. It is grounded three ways, as the paper
prescribes: the user belongs to a category taken from the app's own persona
documents; the user asks a real user query (whose attachment, such as a
photo's text, is carried over verbatim) — the intention combines that
real query with the generated profile and situation (REAG 3.1), and only with
``paraphrase=True`` does the agent rewrite the query in the user's voice; and
a few sampled categories and real queries are shown as examples of how real
users write. Sampling runs at temperature 0.9 (paper 4.4) so that users differ.

Real queries are untrusted text: they reach the prompt only fenced
(``reag.untrusted.fence``), and the system prompt says fenced text is
material, never instructions.
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from dataclasses import dataclass, field

from pydantic import BaseModel, ConfigDict, Field

from reag.apps import SeedQuery
from reag.elicitation.personas import PersonaCategory
from reag.llm.base import Message, Usage
from reag.llm.client import LLMClient
from reag.untrusted import DATA_NOTE, fence

SIMULATION_TEMPERATURE = 0.9

USER_MAX_TOKENS = 1400
"""Enough for the longest draft the schema allows: its strings are bounded in characters
(300 + 400 + 600), a token is at least one character, so the object always closes
within the budget even when a small model spends a token per character."""


class SimulatedProfileDraft(BaseModel):
    """The agent's output when the real query is kept: who asks it, and when."""

    model_config = ConfigDict(extra="ignore")

    profile: str = Field(
        min_length=10,
        max_length=400,
        description="Who this person is: age, circumstances, constraints, goals, habits.",
    )
    situation: str = Field(
        min_length=20,
        max_length=600,
        description="The moment they use the app: where, what, what worries them.",
    )


class SimulatedUserDraft(SimulatedProfileDraft):
    """With ``paraphrase``: the user and the query in their own words; lengths bounded so
    constrained decoding ends."""

    query: str = Field(
        min_length=3,
        max_length=300,
        description="The message they type, in their own words.",
    )


SYSTEM_PROMPT = """You play the users of a software application so that it can be tested
on realistic requests. The application:
{app}

For each request you invent one person who belongs to the persona category you are given,
and write {n_things} things:
- profile: who the person is (age, circumstances, constraints, goals, habits, work
  pattern), with details that vary inside the category: another constraint, a second
  need, a different life stage;
- situation: the moment they open the application, in two or three sentences in the third
  person: where they are, what they are about to do, what is on their mind{query_rule}
Stay inside the category. Do not copy an example, give no advice, and never mention tests or
simulation. {data_note}
Reply with one JSON object with the keys {keys}."""

_QUERY_RULE = """;
- query: the message they type, in their own voice, short and informal like the real
  queries shown, about the same thing as the real query you are given."""
_REAL_QUERY_RULE = """, given that this
  person is about to send the real query you are given."""


@dataclass(frozen=True, slots=True)
class FewShot:
    """What one prompt shows: the target category, its grounding query and the examples."""

    category: PersonaCategory
    grounding: SeedQuery
    example_categories: tuple[PersonaCategory, ...]
    example_queries: tuple[SeedQuery, ...]


def _category_line(category: PersonaCategory, max_chars: int = 400) -> str:
    text = " ".join(category.description.split())
    if len(text) > max_chars:
        text = text[: max_chars - 1].rsplit(" ", 1)[0] + "…"
    return f"- {category.name}: {text}"


def build_messages(app_summary: str, shot: FewShot, *, paraphrase: bool = False) -> list[Message]:
    """The agent's prompt for one user; pure, so tests can read exactly what is sent."""
    categories = "\n".join(_category_line(c) for c in shot.example_categories)
    queries = "\n".join(f"- {q.text}" for q in shot.example_queries)
    parts = [
        "Persona categories of this application (examples):\n"
        + fence("untrusted_persona_examples", categories),
        "Queries real users sent (examples):\n" + fence("untrusted_query_examples", queries),
        (
            "The real query the new user's query should stay close to:\n"
            if paraphrase
            else "The real query this user sends:\n"
        )
        + fence("untrusted_real_query", shot.grounding.text),
    ]
    if shot.grounding.context.strip():
        parts.append(
            f"What the user has in front of them ({shot.grounding.context_title}):\n"
            + fence("untrusted_attachment", shot.grounding.context)
        )
    parts.append(
        "Write the new user for this persona category:\n"
        + fence("untrusted_category", _category_line(shot.category, max_chars=1200))
    )
    return [
        Message(
            "system",
            SYSTEM_PROMPT.format(
                app=app_summary.strip(),
                data_note=DATA_NOTE,
                n_things="three" if paraphrase else "two",
                query_rule=_QUERY_RULE if paraphrase else _REAL_QUERY_RULE,
                keys='"profile", "situation" and "query"'
                if paraphrase
                else '"profile" and "situation"',
            ),
        ),
        Message("user", "\n\n".join(parts)),
    ]


@dataclass(frozen=True, slots=True)
class SimulatedUser:
    """One generated user: the category, the real query it is grounded in, and the draft."""

    category: PersonaCategory
    grounding: SeedQuery
    draft: SimulatedUserDraft
    model: str
    usage: Usage
    cost_usd: float


@dataclass
class FewShotSampler:
    """Draws categories so that a short run still covers many of them.

    Categories are dealt from a shuffled deck that is reshuffled when empty, so
    every category appears once before any appears twice. The grounding query
    is a real query of that category when the seed set has one (by its
    persona hint), else any real query.
    """

    categories: Sequence[PersonaCategory]
    seeds: Sequence[SeedQuery]
    rng: random.Random
    n_example_categories: int = 3
    n_example_queries: int = 4
    _deck: list[PersonaCategory] = field(default_factory=list)

    def __post_init__(self) -> None:
        if not self.categories:
            raise ValueError("simulated users need at least one persona category")
        if not self.seeds:
            raise ValueError(
                "simulated users need real seed queries; list them in the manifest's "
                "'seed_queries' file"
            )

    def draw(self) -> FewShot:
        if not self._deck:
            self._deck = list(self.categories)
            self.rng.shuffle(self._deck)
        category = self._deck.pop()
        own = [q for q in self.seeds if q.persona_hint == category.id]
        grounding = self.rng.choice(own or list(self.seeds))
        others = [c for c in self.categories if c.id != category.id]
        n_others = max(0, min(self.n_example_categories - 1, len(others)))
        example_categories = (*self.rng.sample(others, n_others), category)
        pool = [q for q in self.seeds if q is not grounding]
        example_queries = tuple(self.rng.sample(pool, min(self.n_example_queries, len(pool))))
        return FewShot(category, grounding, example_categories, example_queries)


@dataclass
class SimulatedUserAgent:
    """``paraphrase=False`` (the paper's way): the real query is sent as it is."""

    client: LLMClient
    app_summary: str
    max_tokens: int = USER_MAX_TOKENS
    paraphrase: bool = False

    async def write(self, shot: FewShot, *, seed: int | None = None) -> SimulatedUser:
        messages = build_messages(self.app_summary, shot, paraphrase=self.paraphrase)
        schema = SimulatedUserDraft if self.paraphrase else SimulatedProfileDraft
        result = await self.client.structured(
            messages,
            schema,
            temperature=SIMULATION_TEMPERATURE,
            max_tokens=self.max_tokens,
            seed=seed,
        )
        written = result.value
        if isinstance(written, SimulatedUserDraft):
            draft = written
        else:
            # The real query is data, not model output: its length is not the schema's concern.
            draft = SimulatedUserDraft.model_construct(
                profile=written.profile, situation=written.situation, query=shot.grounding.text
            )
        usage, cost = result.usage, result.cost_usd
        return SimulatedUser(shot.category, shot.grounding, draft, self.client.model, usage, cost)
