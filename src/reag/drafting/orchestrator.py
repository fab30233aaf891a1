"""The orchestrator: project summary at the start, document validation at the end.

S = A_O(I) is a model call. Validation is not: whether every template section
is present and non-empty is a fact the code can check exactly, so the
orchestrator checks it in code and uses its supervisory role to send the
unfilled sections back to the generator, a bounded number of times.
"""

from __future__ import annotations

from reag.drafting.agent import Agent
from reag.drafting.document import NOT_SPECIFIED, SrsDocument, is_blank
from reag.drafting.generator import Generator
from reag.drafting.prompts import ORCHESTRATOR_SUMMARY
from reag.drafting.runlog import ValidationRecord
from reag.drafting.template import Leaf
from reag.llm.base import Message
from reag.untrusted import fence


class Orchestrator(Agent):
    name = "orchestrator"

    async def summarize(self, brief: str) -> str:
        """The project summary S; the brief itself when the model returns nothing usable."""
        messages = [
            Message("system", ORCHESTRATOR_SUMMARY),
            Message("user", f"{fence('untrusted_brief', brief)}\n\nWrite the project summary."),
        ]
        summary = (await self._chat("project summary", messages)).strip()
        if is_blank(summary):
            self.context.log.notes.append(
                "The orchestrator's summary was empty; the brief was used as the summary."
            )
            return brief.strip()
        return summary

    def validate(self, document: SrsDocument) -> list[Leaf]:
        """Leaves that are missing or empty and were not declared "not specified"."""
        return document.unfilled()

    async def ensure_complete(
        self,
        document: SrsDocument,
        generator: Generator,
        report: str,
        stage: str,
        max_corrections: int,
    ) -> SrsDocument:
        """Send unfilled leaves back to the generator until none is left or the bound is hit.

        Leaves still unfilled after ``max_corrections`` are marked "Not specified." by the
        orchestrator and listed in the run log's ``unresolved_sections``, so the output
        always has every section while the log says who decided what.
        """
        for attempt in range(max_corrections + 1):
            unfilled = self.validate(document)
            record = ValidationRecord(
                stage=stage, attempt=attempt, unfilled=[leaf.number for leaf in unfilled]
            )
            self.context.log.validations.append(record)
            if not unfilled:
                return document
            if attempt == max_corrections:
                break
            await generator.write_sections(document, report, unfilled)
            record.refilled = [leaf.number for leaf in unfilled if document.is_filled(leaf.number)]
        for leaf in self.validate(document):
            document.set_text(leaf.number, NOT_SPECIFIED)
            if leaf.number not in self.context.log.unresolved_sections:
                self.context.log.unresolved_sections.append(leaf.number)
        return document

    def verification_comments(self, document: SrsDocument) -> list[str]:
        """The orchestrator's findings passed to the refactor agent (part of F_a)."""
        comments: list[str] = []
        not_specified = [
            leaf.label
            for leaf in document.template.leaves()
            if document.is_not_specified(leaf.number)
        ]
        if not_specified:
            comments.append(
                "Sections marked 'Not specified' (fill them if the report supports it): "
                + "; ".join(not_specified)
            )
        unresolved = self.context.log.unresolved_sections
        if unresolved:
            comments.append(
                "Sections the generator left empty after every correction: " + ", ".join(unresolved)
            )
        return comments
