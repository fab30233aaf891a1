"""The trust report over the SQL store: epoch, exchangeable calibration side, gauges."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

from prometheus_client import REGISTRY

from reag.calibration.scores import Label
from reag.calibration.store import CalibrationItem, CalibrationStore, StoredScore
from reag.trust.from_store import app_report
from reag.trust.store import AuditStore, audit_from_review
from reag.trust.telemetry import observe_report
from reag.v1 import events_pb2 as pb

APP = "trust-app"


def request(i: int, persona: str = "p1") -> pb.JudgeRequest:
    r = pb.JudgeRequest(
        criterion=pb.Criterion(criterion_id=f"c{i}/c0", text="PASS if the answer is short.")
    )
    r.meta.app, r.meta.case_id = APP, f"c{i}"
    r.persona.category_id = persona
    return r


FULL_VERSION = "judge-prompt-v9.n1k3"


def stored(i: int, confidence: float, verdict: Label) -> StoredScore:
    c = confidence
    return StoredScore(
        APP, 1, "m1", FULL_VERSION, f"cal{i}", verdict, confidence, (c,), "logprobs", 0, 0, 0, 0, 1
    )


def audit_review(i: int, confidence: float, verdict: str, label: str) -> pb.Review:
    item = request(i)
    item.audit = True
    item.history.append(
        pb.TierAttempt(
            tier=1,
            verdict=pb.LABEL_YES if verdict == "YES" else pb.LABEL_NO,
            confidence=confidence,
        )
    )
    review = pb.Review(
        criterion_id=f"c{i}/c0", label=pb.LABEL_YES if label == "YES" else pb.LABEL_NO, item=item
    )
    review.meta.app = APP
    return review


def test_report_counts_only_this_epochs_audits_and_exports_gauges(tmp_path: Path) -> None:
    store = CalibrationStore.open(f"sqlite:///{tmp_path / 't.db'}")
    audits = AuditStore(store.sessions)
    store.add_items(
        [CalibrationItem(APP, f"cal{i}", "YES", "p1", request(1000 + i)) for i in range(40)]
    )
    store.put_scores([stored(i, 0.9 + (i % 10) / 100, "YES") for i in range(40)])
    before = audit_from_review(audit_review(0, 0.99, "YES", "NO"))
    assert before is not None
    audits.add(APP, before)  # labelled before the thresholds: fit material, not monitoring
    threshold = pb.Threshold(
        app=APP,
        tier=1,
        model="m1",
        prompt_version="judge-prompt-v9",  # the template; scores are under the full version
        has_threshold=True,
        threshold=0.9,
        alpha=0.1,
        delta=0.1,
        mode="cascade",
    )
    threshold.computed_at.FromDatetime(datetime.now(UTC))
    store.record_thresholds([threshold], prompt_version="judge-prompt-v9.n1k3", trigger="cli")
    for i in range(1, 61):
        audit = audit_from_review(audit_review(i, 0.95, "YES", "YES"))
        assert audit is not None
        audits.add(APP, audit)
    plain = audit_review(99, 0.95, "YES", "YES")
    plain.item.audit = False
    assert audit_from_review(plain) is None  # a reviewed abstention is no audit

    report = app_report(store, audits, APP, alpha=0.3, delta=0.2)
    whole = report.risks["all"]
    assert (report.audits, whole.audits, whole.disagreements) == (60, 60, 0)
    assert whole.alpha == 0.1  # the thresholds' own promise
    assert whole.state == "within"
    assert report.calibration_items == 40
    assert report.drift[1].live == 60
    observe_report(report)

    def gauge(name: str, **labels: str) -> float | None:
        return REGISTRY.get_sample_value(name, {"app": APP, **labels})

    assert gauge("reag_trust_insufficient", tier="all") == 0.0
    assert gauge("reag_trust_risk_bound", tier="1") == whole.bound
    assert gauge("reag_trust_alpha", tier="1") == 0.1
    assert gauge("reag_trust_drift_alarm", tier="1", kind="persona") == 0.0
    # all 60 live confidences are 0.95, calibration spreads 0.90-0.99: a confidence drift
    assert gauge("reag_trust_drift_alarm", tier="1", kind="confidence") == 1.0


def test_app_without_thresholds_is_insufficient(tmp_path: Path) -> None:
    store = CalibrationStore.open(f"sqlite:///{tmp_path / 't.db'}")
    report = app_report(store, AuditStore(store.sessions), "none", alpha=0.2, delta=0.1)
    assert report.risks["all"].state == "insufficient"
    assert report.risks["all"].alpha == 0.2


def test_reag_trust_prints_json_and_tables(tmp_path: Path) -> None:
    import json

    from typer.testing import CliRunner

    from shell.cli.main import app

    dsn = f"sqlite:///{tmp_path / 'cli.db'}"
    store = CalibrationStore.open(dsn)
    audits = AuditStore(store.sessions)
    for i in range(5):
        audit = audit_from_review(audit_review(i, 0.95, "YES", "NO" if i == 0 else "YES"))
        assert audit is not None
        audits.add(APP, audit)
    runner = CliRunner()
    out = runner.invoke(app, ["trust", "--app", APP, "--json", "--store", dsn])
    assert out.exit_code == 0, out.output
    (doc,) = json.loads(out.output)
    assert doc["audits"] == 5
    # no thresholds yet: every audit would abstain, nothing is accepted, nothing to bound
    assert doc["audits_abstained"] == 5
    assert doc["risk"]["all"]["state"] == "insufficient"
    table = runner.invoke(app, ["trust", "--store", dsn])
    assert table.exit_code == 0, table.output
    assert "insufficient" in table.output
