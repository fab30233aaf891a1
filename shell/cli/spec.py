"""``reag spec draft`` and ``reag spec eval``: the requirements front end.

``draft`` turns a short project brief into an SRS with the Agent4RE agents
and writes three files: the SRS as Markdown, the same SRS as the corpus CSV
(``section,subsection,content``) that ``reag corpus add`` ingests, and the
run log (JSON) with every agent call, its tokens, cost and seconds.
``eval`` compares a generated SRS with a reference.
"""

from __future__ import annotations

import asyncio
import json
import re
from dataclasses import dataclass
from enum import StrEnum
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

if TYPE_CHECKING:
    from reag.drafting.document import SrsDocument
    from reag.drafting.feedback import FeedbackSource
    from reag.drafting.runlog import RunLog
    from reag.drafting.settings import SpecSettings
    from reag.drafting.template import Template
    from reag.drafting.workflow import DraftResult

spec_app = typer.Typer(
    name="spec",
    help="Draft a requirements specification from a brief (Agent4RE agents), or evaluate one.",
    no_args_is_help=True,
)

WEAK_MODEL_NOTE = (
    "note: {model} is a 270M base model; it runs every agent and the accounting is real, "
    "but the text it writes is poor. Name a capable model (REAG_SPEC_<AGENT>__MODEL or "
    "--model) for a specification worth reading."
)


class TemplateChoice(StrEnum):
    IEEE830 = "ieee830"
    IEEE29148 = "ieee29148"


class ModeChoice(StrEnum):
    SEQUENTIAL = "sequential"
    SELF_REFINE = "self-refine"
    HUMAN_FEEDBACK = "human-feedback"


def output_paths(out: Path) -> tuple[Path, Path, Path]:
    """Markdown, CSV and run-log paths for ``--out``."""
    markdown = out if out.suffix.lower() == ".md" else out.with_suffix(".md")
    return (
        markdown,
        markdown.with_suffix(".csv"),
        markdown.with_name(markdown.stem + ".runlog.json"),
    )


def title_of(brief: str, fallback: str) -> str:
    """The brief's first heading without a "Project brief:" prefix, else the file's name."""
    for line in brief.splitlines():
        match = re.match(r"^#\s+(.+)$", line.strip())
        if match:
            title = re.sub(r"^(project\s+)?brief\s*[:\-—]\s*", "", match.group(1), flags=re.I)
            return title.strip() or fallback
    return fallback


def prompt_feedback(markdown_path: Path) -> FeedbackSource:
    """Reviewer feedback typed at the terminal, once per round, after seeing the draft."""
    from reag.drafting.feedback import parse_feedback

    def source(document: SrsDocument, round_: int) -> list[str]:
        draft = markdown_path.with_name(f"{markdown_path.stem}.round{round_}-draft.md")
        draft.write_text(document.to_markdown(), encoding="utf-8")
        typer.echo(f"Draft for review (round {round_}): {draft}")
        typer.echo("Type your feedback as bullet points, one per line; an empty line ends it.")
        lines: list[str] = []
        while True:
            line = typer.prompt("-", default="", show_default=False, prompt_suffix=" ")
            if not line.strip():
                break
            lines.append(f"- {line.strip()}")
        return parse_feedback("\n".join(lines))

    return source


def _print_accounting(log: RunLog) -> None:
    typer.echo(
        f"{'agent':<13}{'calls':>6}{'prompt tok':>12}{'cached':>8}{'output tok':>12}"
        f"{'total tok':>11}{'seconds':>10}{'cost USD':>11}"
    )
    rows = [*log.per_agent.items(), ("run", log.run)]
    for name, totals in rows:
        typer.echo(
            f"{name:<13}{totals.calls:>6}{totals.prompt_tokens:>12}{totals.cached_tokens:>8}"
            f"{totals.output_tokens:>12}"
            f"{totals.total_tokens:>11}{totals.seconds:>10.1f}{totals.cost_usd:>11.4f}"
        )


@spec_app.command("draft")
def draft(
    *,
    brief: Annotated[Path, typer.Option("--brief", help="The project brief (Markdown or text).")],
    out: Annotated[Path, typer.Option("--out", help="Where to write the SRS Markdown.")],
    template: Annotated[
        TemplateChoice, typer.Option("--template", help="SRS template.")
    ] = TemplateChoice.IEEE830,
    mode: Annotated[ModeChoice, typer.Option("--mode", help="Workflow.")] = ModeChoice.SEQUENTIAL,
    feedback: Annotated[
        Path | None,
        typer.Option(
            "--feedback",
            help="Reviewer bullet points (human-feedback mode); "
            "without it you are prompted after each draft.",
        ),
    ] = None,
    rounds: Annotated[
        int, typer.Option("--rounds", min=0, max=10, help="Refinement rounds at most.")
    ] = 1,
    model: Annotated[
        str | None,
        typer.Option("--model", help="Model for every agent not given one in settings."),
    ] = None,
    title: Annotated[str | None, typer.Option("--title", help="Project name in the SRS.")] = None,
) -> None:
    """Draft an SRS from a brief: orchestrator, interviewer ↔ stakeholder, generator, refactor."""
    from reag.drafting.errors import SpecError
    from reag.drafting.feedback import feedback_from_file
    from reag.drafting.settings import SpecSettings
    from reag.drafting.template import load_template

    try:
        brief_text = brief.read_text(encoding="utf-8")
    except OSError as exc:
        typer.echo(f"error: cannot read brief {brief}: {exc.strerror}", err=True)
        raise typer.Exit(2) from exc
    markdown_path, csv_path, log_path = output_paths(out)
    markdown_path.parent.mkdir(parents=True, exist_ok=True)
    try:
        settings = SpecSettings()
        if model is not None:
            for agent in AGENT_SETTINGS:
                cfg = getattr(settings, agent)
                if cfg.model is None:
                    setattr(settings, agent, cfg.model_copy(update={"model": model}))
        source: FeedbackSource | None = None
        if mode is ModeChoice.HUMAN_FEEDBACK:
            source = (
                feedback_from_file(feedback)
                if feedback is not None
                else prompt_feedback(markdown_path)
            )
        elif feedback is not None:
            typer.echo("note: --feedback is used only in --mode human-feedback", err=True)
        loaded = load_template(template.value)
    except SpecError as exc:
        typer.echo(f"error: {exc}", err=True)
        raise typer.Exit(2) from exc

    outcome = asyncio.run(
        _run_draft(
            brief_text,
            loaded,
            settings,
            brief_name=str(brief),
            mode=mode.value,
            rounds=rounds,
            source=source,
            title=title or title_of(brief_text, brief.stem),
        )
    )
    log = outcome.log
    if log is None:
        typer.echo(f"error: {outcome.error}", err=True)
        raise typer.Exit(1)
    log.write(log_path)
    if outcome.result is None:
        typer.echo(f"error: {outcome.error}\nrun log so far: {log_path}", err=True)
        raise typer.Exit(1)
    document = outcome.result.document
    markdown_path.write_text(document.to_markdown(), encoding="utf-8")
    csv_path.write_text(document.to_csv(), encoding="utf-8")
    typer.echo(f"SRS:      {markdown_path}\nCSV:      {csv_path}\nrun log:  {log_path}")
    typer.echo(
        f"elicitation: {log.elicitation.turns} turns, stopped by {log.elicitation.stop_reason}; "
        f"refinement rounds run: {len(log.refinements)}"
    )
    if log.unresolved_sections:
        typer.echo(
            "sections the generator left empty after every correction (written as "
            f"'Not specified.'): {', '.join(log.unresolved_sections)}"
        )
    for note in log.notes:
        typer.echo(f"note: {note}")
    _print_accounting(log)


AGENT_SETTINGS = ("orchestrator", "interviewer", "report", "stakeholder", "generator", "refactor")


@dataclass
class _DraftOutcome:
    result: DraftResult | None = None
    log: RunLog | None = None
    error: str = ""


async def _run_draft(
    brief_text: str,
    template: Template,
    settings: SpecSettings,
    *,
    brief_name: str,
    mode: str,
    rounds: int,
    source: FeedbackSource | None,
    title: str,
) -> _DraftOutcome:
    """The agents' run; files are written by the caller, outside the event loop."""
    from reag.drafting.clients import ClientPool
    from reag.drafting.errors import SpecError
    from reag.drafting.workflow import Mode, SpecTeam, draft_spec
    from reag.llm.base import LLMError

    pool = ClientPool()
    try:
        try:
            team = await SpecTeam.from_settings(settings, template, pool)
        except (LLMError, SpecError) as exc:
            return _DraftOutcome(error=str(exc))
        log = team.context.log
        log.brief = brief_name
        models = {str(entry["model"]) for entry in log.agents.values()}
        for weak in sorted(m for m in models if m.startswith("local:gemma-3-270m")):
            typer.echo(WEAK_MODEL_NOTE.format(model=weak), err=True)
        try:
            result = await draft_spec(
                brief_text,
                team,
                title=title,
                mode=Mode(mode),
                rounds=rounds,
                feedback=source,
                max_turns=settings.max_turns,
                max_corrections=settings.max_corrections,
            )
        except (LLMError, SpecError) as exc:
            log.finish()
            log.notes.append(f"run failed: {type(exc).__name__}: {exc}")
            return _DraftOutcome(log=log, error=str(exc))
        return _DraftOutcome(result=result, log=log)
    finally:
        await pool.aclose()


@spec_app.command("eval")
def eval_(
    generated: Annotated[Path, typer.Option("--generated", help="The SRS to grade (.md/.csv).")],
    reference: Annotated[Path, typer.Option("--reference", help="The reference SRS (.md/.csv).")],
    as_json: Annotated[bool, typer.Option("--json", help="Print JSON.")] = False,
    judge: Annotated[
        bool, typer.Option("--judge/--no-judge", help="Also grade with an LLM-as-judge.")
    ] = True,
    judge_model: Annotated[
        str | None, typer.Option("--judge-model", help="Model of the judge (default: settings).")
    ] = None,
) -> None:
    """METEOR, ROUGE-L, BLEU-1, BERTScore F1 and SBERT cosine, whole and per section; judge 1–4."""
    from reag.drafting.errors import SpecError
    from reag.drafting.evaluation import compare, read_spec_text
    from reag.drafting.metrics import default_metrics

    try:
        gen_text = read_spec_text(generated)
        ref_text = read_spec_text(reference)
    except SpecError as exc:
        typer.echo(f"error: {exc}", err=True)
        raise typer.Exit(2) from exc
    report: dict[str, Any] = {"generated": str(generated), "reference": str(reference)}
    report |= compare(gen_text, ref_text, default_metrics())
    report["judge"] = (
        asyncio.run(_judge(gen_text.whole, ref_text.whole, judge_model))
        if judge
        else {"value": None, "error": "not run (--no-judge)"}
    )
    if as_json:
        typer.echo(json.dumps(report, indent=2))
    else:
        _print_eval(report)


async def _judge(generated: str, reference: str, model: str | None) -> dict[str, Any]:
    from reag.drafting.clients import ClientPool
    from reag.drafting.judge import SpecJudge
    from reag.drafting.settings import SpecSettings
    from reag.llm.base import LLMError

    settings = SpecSettings()
    cfg = settings.judge if model is None else settings.judge.model_copy(update={"model": model})
    pool = ClientPool()
    try:
        client = await pool.get(cfg.model)
        out = await SpecJudge(client, cfg).grade(generated, reference, settings.judge_max_chars)
    except LLMError as exc:
        return {"value": None, "error": f"the judge could not run: {exc}"}
    finally:
        await pool.aclose()
    if client.model.startswith("local:gemma-3-270m"):
        out["note"] = (
            "graded by a 270M base model: this grade is mechanics, not a measurement; "
            "the paper used frontier models as judges"
        )
    return out


def _format_value(result: dict[str, Any]) -> str:
    value = result.get("value")
    if value is None:
        return f"n/a ({result.get('error', 'no value')})"
    return str(value) if isinstance(value, int) else f"{value:.4f}"


def _print_eval(report: dict[str, Any]) -> None:
    typer.echo(f"generated: {report['generated']}\nreference: {report['reference']}")
    typer.echo(f"compared: {report['compared_text']}\n\nwhole document")
    for name, result in report["document"].items():
        typer.echo(f"  {name:<13} {_format_value(result)}")
        settings = ", ".join(f"{k}={v}" for k, v in result["settings"].items())
        typer.echo(f"  {'':<13} settings: {settings}")
        for note in result.get("notes", []):
            typer.echo(f"  {'':<13} note: {note}")
    for section in report["sections"]:
        values = "  ".join(f"{n}={_format_value(r)}" for n, r in section["metrics"].items())
        typer.echo(f"\n{section['reference']}\n  {values}")
    unmatched = report["unmatched"]
    if unmatched["only_generated"] or unmatched["only_reference"]:
        typer.echo(f"\nunmatched sections: {json.dumps(unmatched)}")
    judge = report["judge"]
    typer.echo(f"\nLLM-as-judge grade (1-4): {_format_value(judge)}")
    if "settings" in judge:
        typer.echo("settings: " + ", ".join(f"{k}={v}" for k, v in judge["settings"].items()))
    if "rubric" in judge:
        typer.echo(judge["rubric"])
    for key, value in judge.get("findings", {}).items():
        typer.echo(f"  {key}: {value}")
    if "note" in judge:
        typer.echo(f"note: {judge['note']}")


def register(app: typer.Typer) -> None:
    app.add_typer(spec_app, name="spec")
