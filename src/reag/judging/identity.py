"""Which judge a threshold belongs to: λ̂ is valid only for the confidence it was fitted on.

A confidence is a function of the model and its exact weights, the prompt
template, the number of annotators N, the examples per annotator K and the
example sets they are pinned to. Change any of them and the same λ̂ accepts
a different set of items at a different error rate, so the guarantee is
gone. The calibrator stamps the identity of the judges it fitted on every
threshold it publishes; a judge compares it with its own on every use and
accepts nothing under a threshold that is not its own (logged, and exported
as ``reag_judge_threshold_refused``). The calibration set's hash travels on
the threshold for audit only: a judge cannot know it, so it does not match
on it.
"""

from __future__ import annotations

from dataclasses import dataclass, fields

from reag.judging.judge import TierJudge
from reag.judging.prompt import PROMPT_VERSION
from reag.llm.local_models import weights_sha256
from reag.v1 import events_pb2 as pb


@dataclass(frozen=True, slots=True)
class JudgeIdentity:
    tier: int
    model: str
    weights_sha256: str
    prompt_version: str
    n_annotators: int
    k_examples: int
    examples_digest: str

    @classmethod
    def of_judge(cls, judge: TierJudge) -> JudgeIdentity:
        return cls(
            tier=judge.config.tier,
            model=judge.model,
            weights_sha256=weights_sha256(judge.model),
            prompt_version=PROMPT_VERSION,
            n_annotators=judge.config.n_annotators,
            k_examples=judge.config.k_examples,
            examples_digest=judge.annotators.digest(),
        )

    @classmethod
    def of_threshold(cls, threshold: pb.Threshold) -> JudgeIdentity:
        return cls(
            tier=threshold.tier,
            model=threshold.model,
            weights_sha256=threshold.weights_sha256,
            prompt_version=threshold.prompt_version,
            n_annotators=threshold.n_annotators,
            k_examples=threshold.k_examples,
            examples_digest=threshold.examples_digest,
        )

    def stamp(self, threshold: pb.Threshold) -> None:
        """Write this identity into a threshold about to be published or stored."""
        threshold.tier = self.tier
        threshold.model = self.model
        threshold.weights_sha256 = self.weights_sha256
        threshold.prompt_version = self.prompt_version
        threshold.n_annotators = self.n_annotators
        threshold.k_examples = self.k_examples
        threshold.examples_digest = self.examples_digest

    def differences(self, other: JudgeIdentity) -> list[str]:
        """What differs, as "field: theirs ≠ ours", empty when the identities match."""
        out = []
        for f in fields(self):
            ours, theirs = getattr(self, f.name), getattr(other, f.name)
            if ours != theirs:
                out.append(f"{f.name}: {theirs or '(unset)'} ≠ {ours or '(unset)'}")
        return out


def refusal(judge: TierJudge, threshold: pb.Threshold | None) -> str | None:
    """Why ``judge`` must not use ``threshold`` (None: it may, or there is none to use)."""
    if threshold is None:
        return None
    diffs = JudgeIdentity.of_judge(judge).differences(JudgeIdentity.of_threshold(threshold))
    if not diffs:
        return None
    return "fitted on another judge (" + "; ".join(diffs) + "); recalibrate this tier"
