"""Every Prometheus metric reag exports, declared once, with units and labels.

Naming: ``reag_`` prefix, ``_total`` for counters, the unit (``_seconds``,
``_usd``, ``_tokens``) in the name. Services and the core library import the
objects from here; nothing else creates metrics. Dashboards in
``deploy/helm/reag/dashboards/`` query exactly these names.
"""

from __future__ import annotations

from prometheus_client import Counter, Gauge, Histogram

_LATENCY_BUCKETS = (0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300)
_USD_BUCKETS = (1e-6, 1e-5, 5e-5, 1e-4, 5e-4, 1e-3, 5e-3, 1e-2, 5e-2, 0.1, 0.5, 1)

# --- LLM layer: every call, priced -------------------------------------------
LLM_CALLS = Counter(
    "reag_llm_calls_total",
    "LLM calls made, by outcome (ok, error, refused_budget).",
    ["model", "service", "tier", "kind", "outcome"],
)
LLM_TOKENS = Counter(
    "reag_llm_tokens_total",
    "Tokens billed, by type (prompt, completion, cached).",
    ["model", "service", "tier", "type"],
)
LLM_COST = Counter(
    "reag_llm_cost_usd_total",
    "USD spent on LLM calls, from the price table.",
    ["model", "service", "tier"],
)
LLM_CALL_COST = Histogram(
    "reag_llm_call_cost_usd",
    "USD per LLM call.",
    ["model", "service", "tier"],
    buckets=_USD_BUCKETS,
)
LLM_LATENCY = Histogram(
    "reag_llm_call_seconds",
    "Wall time of one LLM call, retries included.",
    ["model", "service", "tier", "kind"],
    buckets=_LATENCY_BUCKETS,
)
LLM_RETRIES = Counter(
    "reag_llm_retries_total",
    "Retries of transient LLM errors, by reason.",
    ["model", "reason"],
)
LLM_BUDGET_REMAINING = Gauge(
    "reag_llm_budget_remaining_usd",
    "Spend budget left before calls are refused.",
    ["service"],
)

# --- Pipeline plumbing ---------------------------------------------------------
EVENTS_CONSUMED = Counter(
    "reag_events_consumed_total",
    "Events a service took from a topic.",
    ["service", "topic"],
)
EVENTS_PUBLISHED = Counter(
    "reag_events_published_total",
    "Events a service published.",
    ["service", "topic"],
)
DEAD_LETTERS = Counter(
    "reag_dead_letters_total",
    "Events sent to reag.dlq.v1, by reason.",
    ["service", "topic", "error_type"],
)
STAGE_LATENCY = Histogram(
    "reag_stage_seconds",
    "Time a service spends on one event.",
    ["service"],
    buckets=_LATENCY_BUCKETS,
)
CONSUMER_LAG = Gauge(
    "reag_consumer_lag_messages",
    "Messages behind the partition's high watermark.",
    ["service", "topic", "partition"],
)

# --- The in-app recorder (reag.client), in the app's own process ------------------
RECORDER_EVENTS = Counter(
    "reag_recorder_events_total",
    "Traffic events the app's recorder handled, by outcome (recorded: acknowledged by "
    "Kafka; sampled_out; dropped_queue_full; failed: invalid, refused or unsent at close).",
    ["app", "outcome"],
)
RECORDER_QUEUE_DEPTH = Gauge(
    "reag_recorder_queue_depth",
    "Events in the recorder's queue, waiting for its background producer.",
    ["app"],
)

# --- Retrieval and oracles -------------------------------------------------------
RETRIEVAL_K = Histogram(
    "reag_retrieval_k",
    "Documents kept by adaptive k (before the buffer).",
    ["app"],
    buckets=(1, 2, 3, 4, 5, 6, 8, 10, 15, 20),
)
ORACLE_CRITERIA = Histogram(
    "reag_oracle_criteria",
    "Pass/fail criteria per oracle.",
    ["app"],
    buckets=(1, 2, 3, 4, 5, 6, 8, 10, 15),
)

# --- Judge cascade ---------------------------------------------------------------
JUDGE_REQUESTS = Counter(
    "reag_judge_requests_total",
    "Criteria a judge tier received.",
    ["tier", "app"],
)
JUDGE_DECISIONS = Counter(
    "reag_judge_decisions_total",
    "What a tier did: accepted, escalated or abstained.",
    ["tier", "app", "decision"],
)
JUDGE_GUARDED = Counter(
    "reag_judge_guarded_total",
    "Criteria a tier abstained on before any model call, by guard reason "
    "(suspected_injection, content_free, undecidable; reag.judging.guards).",
    ["tier", "app", "reason"],
)
JUDGE_VERDICTS = Counter(
    "reag_judge_verdicts_total",
    'Accepted verdicts by label (the verdict mix); provisional="true" for those accepted '
    "under a threshold borrowed from other apps and not yet certified by this app's audits.",
    ["tier", "app", "label", "provisional"],
)
JUDGE_CONFIDENCE = Histogram(
    "reag_judge_confidence",
    "Simulated-annotator confidence per criterion.",
    ["tier"],
    buckets=(0.5, 0.6, 0.7, 0.8, 0.85, 0.9, 0.95, 0.975, 0.99, 0.999, 1.0),
)
JUDGE_COST = Counter(
    "reag_judge_cost_usd_total",
    "USD a tier spent judging (all annotator calls).",
    ["tier"],
)
JUDGE_LATENCY = Histogram(
    "reag_judge_seconds",
    "Time a tier spends on one criterion.",
    ["tier"],
    buckets=_LATENCY_BUCKETS,
)
CRITERION_COST = Histogram(
    "reag_criterion_cost_usd",
    "Cumulative USD per criterion when it leaves the cascade, every tier it passed charged.",
    ["outcome"],
    buckets=_USD_BUCKETS,
)
JUDGE_THRESHOLD = Gauge(
    "reag_judge_threshold",
    "Calibrated λ̂ in force; NaN while the tier has none.",
    ["tier", "app"],
)
JUDGE_THRESHOLD_PRESENT = Gauge(
    "reag_judge_threshold_present",
    "1 if the tier has a threshold (else it accepts nothing).",
    ["tier", "app"],
)
JUDGE_THRESHOLD_PROVISIONAL = Gauge(
    "reag_judge_threshold_provisional",
    "1 while the threshold in force was fitted on other apps' items and the app's own audits "
    "have not certified it yet (reag.trust.provisional): its verdicts are marked provisional.",
    ["tier", "app"],
)
JUDGE_THRESHOLD_WITHDRAWN = Gauge(
    "reag_judge_threshold_withdrawn",
    "1 once the app's audits withdrew its provisional threshold (risk shown above α): the tier "
    "accepts nothing for the app until it is calibrated on its own labels.",
    ["tier", "app"],
)
JUDGE_THRESHOLD_REFUSED = Gauge(
    "reag_judge_threshold_refused",
    "1 while the tier refuses the app's published threshold because it was fitted on another "
    "judge identity (model, weights, prompt version, N, K or example sets): it accepts nothing.",
    ["tier", "app"],
)

# --- Traffic at the door: redaction and shadow controls ---------------------------
TRAFFIC_ADMITTED = Counter(
    "reag_traffic_admitted_total",
    "Live and synthetic cases admitted to the LLM stages.",
    ["app"],
)
TRAFFIC_SHED = Counter(
    "reag_traffic_shed_total",
    "Cases shed before any LLM call by the app's shadow controls, by reason "
    "(sampled_out, rate_limited, budget_usd, budget_compute).",
    ["app", "reason"],
)
REDACTIONS = Counter(
    "reag_redactions_total",
    "Items replaced or dropped by PII redaction at the first reag hop, by kind "
    "(EMAIL, PHONE, CARD, IBAN, IP, custom names, USER_ID, ATTRIBUTE_DROPPED) and where.",
    ["app", "kind", "where"],
)
OTLP_TRAFFIC = Counter(
    "reag_otlp_traffic_total",
    "Traffic events made from OpenTelemetry spans (one per trace with an LLM exchange).",
    ["app"],
)
OTLP_SPANS_SKIPPED = Counter(
    "reag_otlp_spans_skipped_total",
    "OpenTelemetry spans that gave no traffic event, by reason (not_llm, no_trace_id, no_app, "
    "no_query, no_response, superseded, too_large, unknown_app).",
    ["reason"],
)

# --- Ledger, reviews, calibration --------------------------------------------------
RESULTS = Counter(
    "reag_results_total",
    'Test case results by outcome; provisional="true" when the outcome rests on verdicts '
    "accepted under a threshold the app has not certified yet (a day-one app).",
    ["app", "outcome", "provisional"],
)
REVIEWS = Counter("reag_reviews_total", "Expert labels received.", ["app", "label"])
REVIEW_AGREEMENT = Counter(
    "reag_review_agreement_total",
    "Accepted verdicts later reviewed, by whether the reviewer agreed.",
    ["tier", "agreed"],
)
CALIBRATION_RUNS = Counter(
    "reag_calibration_runs_total",
    "Calibrations run, by trigger (cli, reviews).",
    ["trigger"],
)
CALIBRATION_ITEMS = Gauge(
    "reag_calibration_items",
    "Labelled items in the calibration store.",
    ["app"],
)
LEDGER_BATCH_EVENTS = Histogram(
    "reag_ledger_batch_events",
    "Events written in one ledger transaction (group commit, reag.ledger.batching).",
    ["store"],
    buckets=(1, 2, 4, 8, 16, 32, 64, 128, 256),
)
CASES_STUCK = Gauge(
    "reag_cases_stuck",
    "Cases whose oracle reached the ledger but which stayed incomplete past "
    "REAG_LEDGER_STUCK_AFTER_S: lost in flight (an embedded broker restart, a bug).",
    ["app"],
)

# --- Delivery: transient faults wait, apps not loaded yet park (services.kit.delivery) ---
TRANSIENT_RETRIES = Counter(
    "reag_transient_retries_total",
    "Events put back on their paused partition after a transient fault, by the fault's kind "
    "(database, broker, llm, budget, network, park_full); they are retried, never dead-lettered.",
    ["service", "topic", "kind"],
)
PAUSED_PARTITIONS = Gauge(
    "reag_paused_partitions",
    "Partitions a service holds paused while it waits out a transient fault.",
    ["service", "topic"],
)
PARKED_EVENTS = Gauge(
    "reag_parked_events",
    "Events waiting in a service's park for their app's corpus to be loaded.",
    ["service", "topic"],
)
DEAD_LETTERS_CUT = Counter(
    "reag_dead_letters_cut_total",
    "Dead letters whose payload was cut to fit the dead-letter topic (not replayable).",
    ["service", "topic"],
)
DEAD_LETTERS_LOST = Counter(
    "reag_dead_letters_lost_total",
    "Events the broker refused even as a bare dead letter, for a reason that is not "
    "transient: committed without a letter so the partition goes on; alert on any.",
    ["service", "topic"],
)
PARK_EXITS = Counter(
    "reag_park_exits_total",
    "Events that left the park, by outcome (processed, dead_lettered, revoked: the partition "
    "moved to another instance, which reads the event again).",
    ["service", "topic", "outcome"],
)

# --- Trust in production (reag.trust): audits, live risk bounds, drift ---------------
AUDITS = Counter(
    "reag_audits_total",
    "Audited criteria labelled by a reviewer, by the tier that decided them under the "
    "thresholds in force (1..3, or none when every tier would abstain).",
    ["app", "tier"],
)
TRUST_RISK_BOUND = Gauge(
    "reag_trust_risk_bound",
    "Anytime-valid (1-δ) upper bound on the disagreement among audited criteria that the "
    "current thresholds accept, per tier (1..3) and for the whole accepted set (all).",
    ["app", "tier"],
)
TRUST_ALPHA = Gauge(
    "reag_trust_alpha",
    "The α the thresholds in force promise; the bound is compared with it.",
    ["app", "tier"],
)
TRUST_INSUFFICIENT = Gauge(
    "reag_trust_insufficient",
    "1 while the audits cannot yet say whether the risk is within α or above it.",
    ["app", "tier"],
)
TRUST_DRIFT_ALARM = Gauge(
    "reag_trust_drift_alarm",
    "1 when live audits have drifted from the calibration set, by kind (confidence, persona, "
    "criterion_type), tested on a declared schedule with δ split across the looks.",
    ["app", "tier", "kind"],
)
