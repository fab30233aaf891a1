"""``reag judge``: one case judged by hand, through the same tier judge the services run.

It shows what a verdict is made of: each simulated annotator's label
distribution, the confidence (eq. 4: the max over labels of their mean),
the verdict, and whether the threshold in force for the app's tier would
accept it. With ``--app`` the annotators are shown the app's pinned
expert-labelled examples, read from the calibration store exactly as the
judges and the calibrator read them, so the prompts are the live ones.
Without it there are no examples: a single zero-shot annotator judges, and
there is no threshold, since thresholds are per app.
"""

from __future__ import annotations

import asyncio
import dataclasses
import json
from dataclasses import dataclass
from typing import TYPE_CHECKING, Annotated, Any

import typer

if TYPE_CHECKING:
    from reag.calibration.store import CalibrationStore
    from reag.judging.exemplars import AnnotatorSets
    from reag.judging.judge import Judgement, TierJudge
    from reag.judging.settings import CascadeSettings
    from reag.v1 import events_pb2 as pb

# The case's ids when it is tried by hand: not a stored case, never published.
_CASE_ID = "reag-judge"


def _fail(message: str) -> typer.Exit:
    typer.echo(f"error: {message}", err=True)
    return typer.Exit(2)


@dataclass(frozen=True, slots=True)
class _Threshold:
    """The threshold a live judge would hold for this case, or why there is none."""

    threshold: pb.Threshold | None
    note: str | None


def _request(
    criterion: str, query: str, response: str, persona: str | None, app: str | None
) -> pb.JudgeRequest:
    from reag.v1 import events_pb2 as pb

    request = pb.JudgeRequest(
        criterion=pb.Criterion(criterion_id=f"{_CASE_ID}/c0", text=criterion),
        query=query,
        actual_response=response,
        n_criteria=1,
    )
    if persona:
        request.persona.category_name = "given by hand"
        request.persona.description = persona
    request.meta.case_id, request.meta.app = _CASE_ID, app or ""
    request.meta.schema_version = pb.SCHEMA_VERSION_1
    return request


def _annotators(
    settings: CascadeSettings, store: CalibrationStore | None, app: str | None, n: int, k: int
) -> AnnotatorSets:
    from reag.judging.exemplars import draw_annotator_sets
    from reag.judging.pinning import pinned_annotator_sets

    if store is None or app is None:
        return draw_annotator_sets([], n, 0, settings.seed)
    known = store.apps()
    if app not in known:
        raise _fail(
            f"the calibration store ({settings.shown_store_dsn()}) has no labelled items "
            f"for app {app!r}; it has {known or 'none'}. Add some with "
            "`reag calibrate --labels FILE`"
        )
    return pinned_annotator_sets(store, app, n, k, settings.seed)


def _threshold_in_force(
    store: CalibrationStore | None, app: str | None, judge: TierJudge
) -> _Threshold:
    """The latest threshold recorded for (app, tier), if it was fitted on this very judge.

    A λ̂ says nothing about another judge's confidences (another model, weights,
    prompt version, N, K or example sets: ``reag.judging.identity``), so such a
    threshold is reported as not applying rather than used, as a running judge does.
    """
    if store is None or app is None:
        return _Threshold(None, None)
    from reag.judging.identity import refusal

    tier = judge.config.tier
    history = store.threshold_history(app, tier)
    if not history:
        return _Threshold(None, f"no threshold recorded for app {app!r} tier {tier}")
    threshold = history[-1]
    why = refusal(judge, threshold)
    if why is not None:
        return _Threshold(None, f"the threshold in force does not apply: {why}")
    if not threshold.has_threshold:
        return _Threshold(None, f"calibration found no threshold: {threshold.reason}")
    return _Threshold(threshold, None)


def _summary(judge: TierJudge, judgement: Judgement, in_force: _Threshold) -> dict[str, Any]:
    from reag.judging.decision import accepts
    from reag.judging.identity import JudgeIdentity

    threshold = in_force.threshold
    return {
        "model": judgement.model,
        "annotators": [dict(d) for d in judgement.distributions],
        "confidence": judgement.confidence,
        "verdict": judgement.verdict,
        "threshold": threshold.threshold if threshold is not None else None,
        "accepted": accepts(judgement.confidence, threshold),
        "tier": judge.config.tier,
        "prompt_version": judge.prompt_version,
        # What a threshold must have been fitted on to apply (reag.judging.identity).
        "identity": dataclasses.asdict(JudgeIdentity.of_judge(judge)),
        "threshold_note": in_force.note,
    }


def _human(out: dict[str, Any]) -> str:
    annotators = out["annotators"]
    lines = [f"{out['model']}, tier {out['tier']}, {len(annotators)} annotator(s)"]
    lines += [
        f"  annotator {j}: YES {d['YES']:.3f}  NO {d['NO']:.3f}"
        for j, d in enumerate(annotators, start=1)
    ]
    lines.append(
        f"verdict {out['verdict']}, confidence {out['confidence']:.3f} "
        "(the larger of the annotators' mean YES and mean NO)"
    )
    if out["threshold"] is None:
        why = out["threshold_note"] or "no --app: thresholds are per app"
        lines.append(f"no threshold ({why}): a judge would not accept it")
    else:
        verb = "accepts" if out["accepted"] else "does not accept; it would escalate"
        lines.append(f"threshold λ̂ = {out['threshold']:g}: the tier {verb}")
    return "\n".join(lines)


def judge(
    *,
    criterion: Annotated[str, typer.Option("--criterion", help="The pass/fail criterion.")],
    query: Annotated[str, typer.Option("--query", help="The user's query.")],
    response: Annotated[str, typer.Option("--response", help="The app's response.")],
    persona: Annotated[
        str | None, typer.Option("--persona", help="Free-text description of the user.")
    ] = None,
    app_name: Annotated[
        str | None,
        typer.Option("--app", help="Use this app's pinned annotator examples and threshold."),
    ] = None,
    tier: Annotated[
        int | None,
        typer.Option(
            "--tier",
            help="Judge as this cascade tier: its model (REAG_TIER_MODELS) and its threshold.",
            show_default="1",
        ),
    ] = None,
    model: Annotated[
        str | None,
        typer.Option("--model", "-m", help="Judge with this model instead of the tier's."),
    ] = None,
    annotators: Annotated[
        int | None,
        typer.Option(
            "--annotators",
            help="Simulated annotators N.",
            show_default="the tier's N (REAG_TIER_ANNOTATORS)",
        ),
    ] = None,
    examples: Annotated[
        int | None,
        typer.Option(
            "--examples",
            help="Examples per annotator K (needs --app).",
            show_default="REAG_EXAMPLES",
        ),
    ] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print one JSON object.")] = False,
) -> None:
    """Judge one case by hand: each annotator's P(YES)/P(NO), confidence, verdict, threshold."""
    from reag.calibration.store import CalibrationStore
    from reag.judging.errors import JudgeConfigError, LabelProbsError
    from reag.judging.judge import JudgeConfig, TierJudge
    from reag.judging.settings import CascadeSettings
    from reag.llm import Caller, LLMError
    from reag.llm.registry import make_client

    settings = CascadeSettings()
    tier = 1 if tier is None else tier
    if not 1 <= tier <= settings.n_tiers:
        raise _fail(
            f"--tier must be between 1 and {settings.n_tiers} (REAG_TIER_MODELS), got {tier}"
        )
    n = settings.annotators_for(tier) if annotators is None else annotators
    k = settings.examples if examples is None else examples
    if app_name is None and examples is not None and examples > 0:
        raise _fail("--examples come from an app's labelled items; give --app as well")
    if app_name is None:
        k = 0
    try:
        config = JudgeConfig(
            tier=tier, n_annotators=n, k_examples=k, seed=settings.seed, n_samples=settings.samples
        )
        model_name = model or settings.model_for(tier)
    except (JudgeConfigError, ValueError) as exc:
        raise _fail(str(exc)) from exc
    store = CalibrationStore.open(settings.resolved_store_dsn()) if app_name is not None else None
    sets = _annotators(settings, store, app_name, n, k)
    if sets.n_annotators < n and not as_json:
        typer.echo(
            f"note: {sets.n_annotators} annotator(s), not {n}: "
            + (
                "without examples every annotator's prompt is the same"
                if k == 0 or app_name is None
                else f"app {app_name!r} has too few labelled items for {n} distinct sets"
            ),
            err=True,
        )
    request = _request(criterion, query, response, persona, app_name)

    async def run() -> tuple[TierJudge, Judgement]:
        client = make_client(model_name, caller=Caller("cli", str(tier)))
        try:
            tier_judge = TierJudge(client, config, sets)
            return tier_judge, await tier_judge.judge(request)
        finally:
            await client.aclose()

    try:
        tier_judge, judgement = asyncio.run(run())
    except (LLMError, LabelProbsError) as exc:
        raise _fail(str(exc)) from exc
    out = _summary(tier_judge, judgement, _threshold_in_force(store, app_name, tier_judge))
    typer.echo(json.dumps(out) if as_json else _human(out))


def register(app: typer.Typer) -> None:
    app.command("judge")(judge)
