"""How a document's kind is decided: declared, from a section title, or from the file name.

SRS exports and the requirements-drafting agents title their sections after
IEEE 830 / ISO/IEC/IEEE 29148 templates ("3.1 External Interface
Requirements", "2.3 User Characteristics"), so section titles are matched
after dropping their numbering, first against an exact synonym table and then
by keywords. Order matters: "non-functional requirements" and "performance
requirements" must not fall into "requirement".
"""

from __future__ import annotations

import re

from reag.corpus.model import DocumentKind

# Spellings accepted wherever a kind is declared (front matter, --kind, JSON/YAML).
_KIND_ALIASES: dict[str, DocumentKind] = {
    "requirement": "requirement",
    "requirements": "requirement",
    "req": "requirement",
    "functional_requirement": "requirement",
    "functional_requirements": "requirement",
    "fr": "requirement",
    "user_story": "user_story",
    "user_stories": "user_story",
    "story": "user_story",
    "stories": "user_story",
    "persona": "persona",
    "personas": "persona",
    "user_persona": "persona",
    "user_personas": "persona",
    "domain_knowledge": "domain_knowledge",
    "domain": "domain_knowledge",
    "knowledge": "domain_knowledge",
    "background": "background",
    "nfr": "nfr",
    "nfrs": "nfr",
    "non_functional": "nfr",
    "nonfunctional": "nfr",
    "non_functional_requirement": "nfr",
    "non_functional_requirements": "nfr",
}

# Section title (numbering removed, lower case, single spaces) -> kind. Documented in
# docs/retrieval.md; extend both together.
SECTION_SYNONYMS: dict[str, DocumentKind] = {
    # requirements: IEEE 830 section 3 / ISO 29148 9.5
    "functional requirements": "requirement",
    "specific requirements": "requirement",
    "requirements": "requirement",
    "system requirements": "requirement",
    "software requirements": "requirement",
    "system features": "requirement",
    "features": "requirement",
    "functions": "requirement",
    "product functions": "requirement",
    "external interface requirements": "requirement",
    "interface requirements": "requirement",
    "user interfaces": "requirement",
    "hardware interfaces": "requirement",
    "software interfaces": "requirement",
    "communications interfaces": "requirement",
    "logical database requirements": "requirement",
    # user stories
    "user stories": "user_story",
    "stories": "user_story",
    "use cases": "user_story",
    "usage scenarios": "user_story",
    "scenarios": "user_story",
    "epics": "user_story",
    # personas
    "personas": "persona",
    "persona": "persona",
    "user personas": "persona",
    "user characteristics": "persona",
    "user classes and characteristics": "persona",
    "stakeholders": "persona",
    "users": "persona",
    # domain knowledge
    "domain knowledge": "domain_knowledge",
    "domain": "domain_knowledge",
    "domain model": "domain_knowledge",
    "business rules": "domain_knowledge",
    "guidelines": "domain_knowledge",
    "knowledge base": "domain_knowledge",
    "reference data": "domain_knowledge",
    # background
    "background": "background",
    "introduction": "background",
    "overall description": "background",
    "purpose": "background",
    "scope": "background",
    "product scope": "background",
    "overview": "background",
    "product overview": "background",
    "product perspective": "background",
    "operating environment": "background",
    "assumptions and dependencies": "background",
    "definitions": "background",
    "definitions acronyms and abbreviations": "background",
    "glossary": "background",
    "references": "background",
    "appendix": "background",
    "appendices": "background",
    "supporting information": "background",
    "verification": "background",
    "document conventions": "background",
    "intended audience": "background",
    # non-functional requirements: IEEE 830 3.3, 3.5, 3.6 / ISO 29148 9.5.x
    "non functional requirements": "nfr",
    "nonfunctional requirements": "nfr",
    "non functional": "nfr",
    "performance": "nfr",
    "performance requirements": "nfr",
    "security": "nfr",
    "security requirements": "nfr",
    "safety requirements": "nfr",
    "reliability": "nfr",
    "availability": "nfr",
    "maintainability": "nfr",
    "portability": "nfr",
    "usability": "nfr",
    "usability requirements": "nfr",
    "quality": "nfr",
    "quality attributes": "nfr",
    "software quality attributes": "nfr",
    "software system attributes": "nfr",
    "design constraints": "nfr",
    "constraints": "nfr",
    "privacy": "nfr",
    "compliance": "nfr",
    "regulatory requirements": "nfr",
}

# Fallback when no exact synonym matches: the first rule with a keyword in the title wins.
_KEYWORD_RULES: tuple[tuple[DocumentKind, tuple[str, ...]], ...] = (
    (
        "nfr",
        (
            "non functional",
            "nonfunctional",
            "performance",
            "security",
            "safety",
            "reliability",
            "availability",
            "maintainability",
            "portability",
            "usability",
            "quality",
            "constraint",
            "privacy",
            "compliance",
            "regulatory",
            "latency",
        ),
    ),
    ("user_story", ("user stor", "use case", "scenario", "epic")),
    ("persona", ("persona", "user characteristic", "user class", "stakeholder profile")),
    ("domain_knowledge", ("domain", "knowledge", "business rule", "guideline")),
    (
        "background",
        (
            "introduction",
            "overview",
            "background",
            "purpose",
            "scope",
            "perspective",
            "assumption",
            "definition",
            "glossary",
            "reference",
            "appendix",
            "environment",
            "audience",
            "convention",
        ),
    ),
    ("requirement", ("requirement", "feature", "function", "interface", "capabilit")),
)

# "3.1 ", "3.1. ", "IV. ", "Section 2 ": numbering that carries no meaning for the kind.
_NUMBERING = re.compile(r"^(?:(?i:section|chapter)\s+)?(?:\d+(?:\.\d+)*\.?|[IVXLC]+\.)\s+")


def _normalise(text: str) -> str:
    return re.sub(r"[^a-z0-9]+", " ", text.lower()).strip()


def parse_kind(text: str) -> DocumentKind | None:
    """A declared kind in any accepted spelling (``user stories``, ``NFR``), else None."""
    key = re.sub(r"[^a-z0-9]+", "_", text.strip().lower()).strip("_")
    return _KIND_ALIASES.get(key)


_FILENAME_RULES: tuple[tuple[DocumentKind, str], ...] = (
    ("persona", "persona"),
    ("domain_knowledge", "domain"),
    ("background", "background"),
    ("requirement", "requirement"),
)


def kind_from_filename(stem: str) -> DocumentKind | None:
    """requirements.md -> requirement, non_functional.md -> nfr; None if the name says nothing."""
    name = _normalise(stem)
    squashed = name.replace(" ", "")
    if "nfr" in name.split() or "nonfunctional" in squashed:
        return "nfr"
    if "userstor" in squashed or name.split()[:1] == ["stories"]:
        return "user_story"
    for kind, needle in _FILENAME_RULES:
        if needle in squashed:
            return kind
    return None


def kind_from_section(section: str) -> DocumentKind | None:
    """Kind of an SRS section title, numbering ignored ("3.3 Performance Requirements" -> nfr)."""
    stripped = _NUMBERING.sub("", section.strip())
    title = _normalise(stripped)
    if title in SECTION_SYNONYMS:
        return SECTION_SYNONYMS[title]
    declared = parse_kind(stripped)
    if declared is not None:
        return declared
    for kind, keywords in _KEYWORD_RULES:
        if any(k in title for k in keywords):
            return kind
    return None
