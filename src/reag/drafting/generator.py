"""The generator: fills the template from the elicitation report, and revises it.

Agent4RE puts the template into the generator's system message and lets it
write the whole document (D₀ = A_G(R, T_re)). We ask for one leaf section per
call instead, with the whole outline in the system message: the structure is
then guaranteed by the code, not hoped for from the model, which matters for
small local models, and a missing section can be sent back on its own.
"""

from __future__ import annotations

from reag.drafting.agent import Agent, RunContext
from reag.drafting.document import SrsDocument
from reag.drafting.prompts import GENERATOR_REVISE, GENERATOR_SECTION
from reag.drafting.refactor import ImprovementCommand
from reag.drafting.settings import AgentSettings
from reag.drafting.template import Leaf, Template
from reag.llm.base import Message
from reag.llm.client import LLMClient
from reag.untrusted import fence


class Generator(Agent):
    name = "generator"

    def __init__(
        self,
        client: LLMClient,
        settings: AgentSettings,
        template: Template,
        context: RunContext | None = None,
    ) -> None:
        super().__init__(client, settings, context)
        self.template = template

    async def draft(self, report: str, title: str) -> SrsDocument:
        """D₀: every leaf of the template written from the report."""
        document = SrsDocument(self.template, title)
        await self.write_sections(document, report, self.template.leaves())
        return document

    async def write_sections(self, document: SrsDocument, report: str, leaves: list[Leaf]) -> None:
        """(Re)write the given leaves in place; a blank reply leaves the leaf unfilled."""
        system = GENERATOR_SECTION.format(
            template_name=self.template.name, outline=self.template.outline()
        )
        for leaf in leaves:
            messages = [
                Message("system", system),
                Message(
                    "user",
                    f"{fence('untrusted_elicitation_report', report)}\n\n"
                    f"Write the body of section {leaf.label} "
                    f"(part of {leaf.section_label}).",
                ),
            ]
            document.set_text(leaf.number, await self._chat(f"section {leaf.number}", messages))

    async def revise(
        self, document: SrsDocument, commands: list[ImprovementCommand], report: str
    ) -> tuple[SrsDocument, list[str]]:
        """D_{k+1}: the sections the commands address, rewritten; returns the new document
        and the numbers of the revised leaves."""
        revised = document.copy()
        targets = commands_by_leaf(self.template, commands)
        system = GENERATOR_REVISE.format(template_name=self.template.name)
        for leaf in self.template.leaves():
            leaf_commands = targets.get(leaf.number)
            if not leaf_commands:
                continue
            command_text = "\n".join(f"- {c.command}" for c in leaf_commands)
            messages = [
                Message("system", system),
                Message(
                    "user",
                    f"{fence('untrusted_elicitation_report', report)}\n\n"
                    f"{fence('untrusted_current_section', document.text(leaf.number))}\n\n"
                    f"{fence('untrusted_improvement_commands', command_text)}\n\n"
                    f"Rewrite the body of section {leaf.label}.",
                ),
            ]
            revised.set_text(leaf.number, await self._chat(f"revise {leaf.number}", messages))
        return revised, [n for n in targets if targets[n]]


def commands_by_leaf(
    template: Template, commands: list[ImprovementCommand]
) -> dict[str, list[ImprovementCommand]]:
    """Which leaf each command addresses.

    A leaf number addresses that leaf; a heading's number (``3`` or ``3.1``)
    addresses every leaf under it; anything else (``all``, a number the
    template does not have) addresses every leaf, since the command still
    has to be applied somewhere.
    """
    leaves = [leaf.number for leaf in template.leaves()]
    out: dict[str, list[ImprovementCommand]] = {number: [] for number in leaves}
    for command in commands:
        section = command.section.strip().rstrip(".").split(" ", 1)[0]
        under = [n for n in leaves if n == section or n.startswith(section + ".")]
        for number in under or leaves:
            out[number].append(command)
    return out
