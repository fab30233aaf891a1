"""``draft_spec``: the Agent4RE workflow in its three modes.

sequential       S = A_O(I); elicitation loop; R; D₀ = A_G(R, T_re); validation.
self-refine      then, per round k: commands = A_R(D_k, F_a); D_{k+1} = A_G(D_k, commands).
human-feedback   as self-refine, with the reviewer's bullet points F_h added to A_R's input.

``--rounds`` bounds the refinement loop; self-refine also stops early when the
refactor agent has no command left. Every agent call lands in the run log.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum

from reag.drafting.agent import RunContext
from reag.drafting.clients import ClientPool
from reag.drafting.document import SrsDocument, is_blank
from reag.drafting.errors import FeedbackError
from reag.drafting.feedback import FeedbackSource
from reag.drafting.generator import Generator
from reag.drafting.interview import (
    Elicitation,
    Interviewer,
    Stakeholder,
    run_elicitation,
    transcript,
)
from reag.drafting.orchestrator import Orchestrator
from reag.drafting.refactor import ImprovementCommand, Refactor
from reag.drafting.runlog import RefinementRecord, RunLog
from reag.drafting.settings import SpecSettings
from reag.drafting.template import Template


class Mode(StrEnum):
    SEQUENTIAL = "sequential"
    SELF_REFINE = "self-refine"
    HUMAN_FEEDBACK = "human-feedback"


@dataclass
class SpecTeam:
    """The five agents of one run, sharing one run context."""

    orchestrator: Orchestrator
    interviewer: Interviewer
    stakeholder: Stakeholder
    generator: Generator
    refactor: Refactor
    context: RunContext

    @classmethod
    async def from_settings(
        cls, settings: SpecSettings, template: Template, pool: ClientPool
    ) -> SpecTeam:
        context = RunContext(seed=settings.seed)
        team = cls(
            orchestrator=Orchestrator(
                await pool.get(settings.orchestrator.model), settings.orchestrator, context
            ),
            interviewer=Interviewer(
                await pool.get(settings.interviewer.model),
                settings.interviewer,
                context,
                report_settings=settings.report,
            ),
            stakeholder=Stakeholder(
                await pool.get(settings.stakeholder.model), settings.stakeholder, context
            ),
            generator=Generator(
                await pool.get(settings.generator.model), settings.generator, template, context
            ),
            refactor=Refactor(
                await pool.get(settings.refactor.model),
                settings.refactor,
                context,
                max_draft_chars=settings.refactor_max_draft_chars,
            ),
            context=context,
        )
        context.log.agents = {
            agent.name: {
                "model": agent.client.model,
                "temperature": agent.settings.temperature,
                "max_tokens": agent.settings.max_tokens,
            }
            for agent in (
                team.orchestrator,
                team.interviewer,
                team.stakeholder,
                team.generator,
                team.refactor,
            )
        }
        context.log.agents["interviewer"]["report_max_tokens"] = settings.report.max_tokens
        return team


@dataclass
class DraftResult:
    document: SrsDocument
    summary: str
    elicitation: Elicitation
    log: RunLog


async def draft_spec(
    brief: str,
    team: SpecTeam,
    *,
    title: str,
    mode: Mode = Mode.SEQUENTIAL,
    rounds: int = 1,
    feedback: FeedbackSource | None = None,
    max_turns: int = 10,
    max_corrections: int = 2,
) -> DraftResult:
    if is_blank(brief):
        raise FeedbackError("the project brief is empty; write a few sentences about the project")
    if mode is Mode.HUMAN_FEEDBACK and feedback is None:
        raise FeedbackError(
            "human-feedback mode needs reviewer feedback: pass --feedback FILE or type it "
            "at the prompt"
        )
    if rounds < 0:
        raise ValueError("rounds must be 0 or more")
    context = team.context
    log = context.log
    log.template, log.mode, log.rounds = team.generator.template.id, mode.value, rounds
    context.round = 0

    summary = await team.orchestrator.summarize(brief)
    elicitation = await run_elicitation(team.interviewer, team.stakeholder, summary, max_turns)
    log.elicitation.turns = elicitation.turns
    log.elicitation.stop_reason = elicitation.stop_reason
    report = elicitation.report
    if is_blank(report):
        log.notes.append(
            "The elicitation report was empty; the generator worked from the summary and "
            "the interview transcript instead."
        )
        report = f"{summary}\n\n{transcript(elicitation.exchanges)}".strip()

    document = await team.generator.draft(report, title)
    document = await team.orchestrator.ensure_complete(
        document, team.generator, report, "initial draft", max_corrections
    )

    if mode is not Mode.SEQUENTIAL:
        for k in range(1, rounds + 1):
            context.round = k
            human = feedback(document, k) if feedback is not None else []
            verification = team.orchestrator.verification_comments(document)
            commands = await team.refactor.review(document, verification, human)
            if not commands and human:
                log.notes.append(
                    f"Round {k}: the refactor agent gave no usable command; the reviewer's "
                    "points were passed to the generator as commands for every section."
                )
                commands = [
                    ImprovementCommand(
                        section="all",
                        quality="completeness",
                        finding="reviewer feedback",
                        command=point,
                    )
                    for point in human
                ]
            record = RefinementRecord(
                round=k,
                commands=[f"[{c.section}] {c.command}" for c in commands],
                human_feedback=human,
            )
            log.refinements.append(record)
            if not commands:
                log.notes.append(f"Round {k}: no improvement command; refinement stopped.")
                break
            document, record.revised_sections = await team.generator.revise(
                document, commands, report
            )
            document = await team.orchestrator.ensure_complete(
                document, team.generator, report, f"round {k}", max_corrections
            )
    log.finish()
    return DraftResult(document, summary, elicitation, log)
