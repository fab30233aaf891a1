from __future__ import annotations

from typing import Any

from reag.drafting.agent import RunContext
from reag.drafting.generator import Generator, commands_by_leaf
from reag.drafting.refactor import ImprovementCommand
from reag.drafting.settings import SpecSettings
from reag.drafting.template import load_template

TEMPLATE = load_template("ieee830")


def command(section: str, text: str = "Make it measurable.") -> ImprovementCommand:
    return ImprovementCommand(section=section, quality="verifiability", command=text)


async def test_draft_writes_every_leaf_with_the_outline_in_the_system_message(fakes: Any) -> None:
    gen_client, provider = fakes.client(fakes.section_writer())
    generator = Generator(gen_client, SpecSettings().generator, TEMPLATE, RunContext())
    document = await generator.draft("the report", "NutriLens")
    assert document.unfilled() == []
    assert len(provider.calls) == len(TEMPLATE.leaves())
    system = provider.calls[0].payload[0].content
    assert "3.1.4 Communications interfaces" in system
    assert provider.calls[0].options["temperature"] == 0.8
    assert (
        "<untrusted_elicitation_report>\nthe report\n</untrusted_elicitation_report>"
        in fakes.user_text(provider.calls[0].payload)
    )


async def test_explicit_not_specified_reply_is_kept_as_the_generators_decision(fakes: Any) -> None:
    gen_client, _ = fakes.client("Not specified.")
    generator = Generator(gen_client, SpecSettings().generator, TEMPLATE, RunContext())
    document = await generator.draft("r", "x")
    assert all(document.is_not_specified(leaf.number) for leaf in TEMPLATE.leaves())
    assert document.unfilled() == []


def test_commands_reach_their_sections() -> None:
    routed = commands_by_leaf(TEMPLATE, [command("3.5.3"), command("3.1."), command("all")])
    assert len(routed["3.5.3"]) == 2  # its own command + the general one
    assert [len(routed[n]) for n in ("3.1.1", "3.1.2", "3.1.3", "3.1.4")] == [2, 2, 2, 2]
    assert len(routed["1.1"]) == 1  # only the general one


async def test_revise_rewrites_only_addressed_sections_and_shows_the_commands(fakes: Any) -> None:
    gen_client, provider = fakes.client(fakes.section_writer())
    generator = Generator(gen_client, SpecSettings().generator, TEMPLATE, RunContext())
    document = await generator.draft("r", "x")
    document.set_text("2.3", "Old text of 2.3.")
    provider.calls.clear()
    revised, sections = await generator.revise(document, [command("2.3", "Name the users.")], "r")
    assert sections == ["2.3"]
    assert len(provider.calls) == 1
    prompt = fakes.user_text(provider.calls[0].payload)
    assert "<untrusted_current_section>\nOld text of 2.3.\n</untrusted_current_section>" in prompt
    assert "- Name the users." in prompt
    assert revised.text("2.3") == "The system shall do what section 2.3 requires."
    assert document.text("2.3") == "Old text of 2.3."  # the earlier draft is left as it was
