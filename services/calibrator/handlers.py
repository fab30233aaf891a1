"""The calibrator's handler: decode a review, hand it to the ``Recalibrator``, publish.

The policy (which labels count, when to refit, audits, trust epochs) is
``reag.recalibration``; this module only wires it to the reviews and
thresholds topics.
"""

from __future__ import annotations

from faststream.kafka import KafkaRouter

from reag.recalibration import Recalibrator
from reag.v1 import events_pb2 as pb
from services.calibrator.publish import threshold_emits
from services.calibrator.settings import CalibratorSettings
from services.kit.codec import BadEventError
from services.kit.delivery import Emit, consume
from services.kit.topology import REVIEWS, SERVICES, THRESHOLDS, suffixed


def build_router(settings: CalibratorSettings, recalibrator: Recalibrator) -> KafkaRouter:
    suffix = settings.topic_suffix
    spec = suffixed(SERVICES["calibrator"], suffix)
    router = KafkaRouter()

    @consume(
        router,
        spec,
        REVIEWS + suffix,
        pb.Review,
        max_event_bytes=settings.kafka.max_event_bytes,
        delivery=settings.delivery,
        group_id=f"{spec.name}{suffix}",
    )
    async def learn_from_review(review: pb.Review) -> list[Emit] | None:
        if not review.HasField("item") or not review.item.criterion.text:
            raise BadEventError(
                "missing_field",
                "Review lacks item (the reviewed JudgeRequest with its criterion), so it "
                "cannot join the calibration set; review tools must send what was reviewed",
            )
        thresholds = await recalibrator.on_review(review)
        return threshold_emits(thresholds, THRESHOLDS + suffix) if thresholds else None

    return router
