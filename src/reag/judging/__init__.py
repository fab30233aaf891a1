"""The judge cascade's core (paper 3.4.1): simulated annotators, confidence, decisions.

No Kafka here: ``services/judge`` wires a ``TierJudge`` and ``next_step`` to
the tier topics; ``reag.calibration_run`` uses the same judges to score
calibration items, so live and calibration prompts are one code path.
"""

from reag.judging.cascade import Step, next_step, tier_attempt
from reag.judging.decision import ThresholdBook, accepts, scaled_confidence, threshold_key
from reag.judging.errors import JudgeConfigError, JudgingError, LabelProbsError
from reag.judging.exemplars import (
    LABELS,
    AnnotatorSets,
    LabelledExample,
    draw_annotator_sets,
)
from reag.judging.judge import JudgeConfig, Judgement, TierJudge, aggregate
from reag.judging.prompt import PROMPT_VERSION, annotator_prefix, annotator_prompts, case_part

__all__ = [
    "LABELS",
    "PROMPT_VERSION",
    "AnnotatorSets",
    "JudgeConfig",
    "JudgeConfigError",
    "Judgement",
    "JudgingError",
    "LabelProbsError",
    "LabelledExample",
    "Step",
    "ThresholdBook",
    "TierJudge",
    "accepts",
    "aggregate",
    "annotator_prefix",
    "annotator_prompts",
    "case_part",
    "draw_annotator_sets",
    "next_step",
    "scaled_confidence",
    "threshold_key",
    "tier_attempt",
]
