"""The Helm chart rendered by a real helm: one hardened Deployment per service in the topology.

The services' own settings classes read the rendered environment, so a
variable the chart spells differently from the code fails here, not in a pod.
"""

from __future__ import annotations

import ast
import importlib
import importlib.util
import inspect
import json
import os
import subprocess
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from reag import metrics
from reag.exposure import refuse_open_bind
from reag.llm.settings import LLMSettings
from services.judge.settings import JudgeSettings
from services.kit.admin import topic_configs
from services.kit.settings import ServiceSettings
from services.kit.topology import OTLP_SPANS, SERVICES, TOPICS, TRAFFIC
from services.ledger.settings import LedgerSettings

from .conftest import TOKEN_SECRET

pytestmark = pytest.mark.slow

CHART = Path(__file__).resolve().parents[3] / "deploy" / "helm" / "reag"
Manifest = dict[str, Any]
Render = Callable[..., list[Manifest]]
HelmRun = Callable[..., subprocess.CompletedProcess[str]]


def of_kind(manifests: list[Manifest], kind: str) -> list[Manifest]:
    return [m for m in manifests if m["kind"] == kind]


def by_component(manifests: list[Manifest], kind: str) -> dict[str, Manifest]:
    found = of_kind(manifests, kind)
    table = {m["metadata"]["labels"]["app.kubernetes.io/component"]: m for m in found}
    assert len(table) == len(found), f"two {kind}s for one component"
    return table


def container(deployment: Manifest) -> Manifest:
    containers = deployment["spec"]["template"]["spec"]["containers"]
    assert len(containers) == 1
    result: Manifest = containers[0]
    return result


def port(c: Manifest, name: str) -> int:
    ports = {p["name"]: p["containerPort"] for p in c.get("ports", [])}
    return int(ports[name])


def environment(manifests: list[Manifest], deployment: Manifest) -> dict[str, str]:
    """What the container's process sees: its ConfigMaps and the chart's own Secret
    (envFrom), then its own env."""
    configmaps = {m["metadata"]["name"]: m["data"] for m in of_kind(manifests, "ConfigMap")}
    secrets = {m["metadata"]["name"]: m["stringData"] for m in of_kind(manifests, "Secret")}
    env: dict[str, str] = {}
    c = container(deployment)
    for source in c.get("envFrom", []):
        if "configMapRef" in source:
            env |= configmaps[source["configMapRef"]["name"]]
        elif "secretRef" in source:  # an existing Secret is not rendered: nothing to read
            env |= secrets.get(source["secretRef"]["name"], {})
    for var in c.get("env", []):
        if "valueFrom" in var:  # a Secret's key: stands for a value set in the cluster
            ref = var["valueFrom"]["secretKeyRef"]
            env[var["name"]] = f"<secret {ref['name']}/{ref['key']}>"
        else:
            env[var["name"]] = var["value"]
    return env


def settings_class(module: str) -> type[ServiceSettings]:
    """The one ServiceSettings subclass declared in ``<module>.settings``."""
    settings = importlib.import_module(f"{module}.settings")
    found = [
        cls
        for _, cls in inspect.getmembers(settings, inspect.isclass)
        if issubclass(cls, ServiceSettings) and cls.__module__ == settings.__name__
    ]
    assert len(found) == 1, f"{module}.settings should declare one settings class: {found}"
    return found[0]


@pytest.fixture
def clean_env(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> pytest.MonkeyPatch:
    """No REAG_* variables and no .env file from the machine running the tests."""
    for name in list(os.environ):
        if name.startswith(("REAG_", "OPENAI_", "GEMINI_", "GOOGLE_API")):
            monkeypatch.delenv(name)
    monkeypatch.chdir(tmp_path)
    return monkeypatch


def test_lint_passes_with_defaults_and_with_every_option(helm_run: HelmRun) -> None:
    every_option = [
        TOKEN_SECRET,
        "grpc.allowInsecure=true",
        "components.ledger.grpc.tls.existingSecret=ledger-tls",
        "networkPolicy.enabled=false",
        "kafka.securityProtocol=SASL_SSL",
        "kafka.saslUsername=reag",
        "kafka.tls.existingSecret=kafka-ca",
        "secrets.existingSecret=reag-secrets",
        "serviceMonitor.enabled=true",
        "topics.create=true",
        "scrapeAnnotations=true",
        "components.judge-tier1.autoscaling.enabled=true",
        "components.judge-tier2.autoscaling.enabled=true",
        "components.judge-tier2.autoscaling.mode=hpa",
    ]
    # The defaults but the one value the chart insists on: who may call gRPC.
    plain = helm_run("lint", "--strict", str(CHART), "--set", TOKEN_SECRET)
    assert plain.returncode == 0, plain.stdout + plain.stderr
    sets = [arg for assignment in every_option for arg in ("--set", assignment)]
    full = helm_run("lint", "--strict", str(CHART), *sets)
    assert full.returncode == 0, full.stdout + full.stderr


def test_one_deployment_and_service_per_topology_service(rendered: list[Manifest]) -> None:
    assert set(by_component(rendered, "Deployment")) == set(SERVICES)
    assert set(by_component(rendered, "Service")) == set(SERVICES)


def test_each_deployment_runs_its_own_service_module(rendered: list[Manifest]) -> None:
    for name, deployment in by_component(rendered, "Deployment").items():
        command = container(deployment)["command"]
        assert command[:2] == ["python", "-m"]
        module = command[2]
        expected = "services.judge" if name.startswith("judge-tier") else f"services.{name}"
        assert module == expected, name
        assert importlib.util.find_spec(f"{module}.__main__") is not None, module


def test_pods_are_non_root_with_read_only_root_filesystem(rendered: list[Manifest]) -> None:
    for name, deployment in by_component(rendered, "Deployment").items():
        pod = deployment["spec"]["template"]["spec"]
        assert pod["securityContext"]["runAsNonRoot"] is True, name
        assert pod["securityContext"]["runAsUser"] > 0, name
        assert pod["automountServiceAccountToken"] is False, name
        security = container(deployment)["securityContext"]
        assert security["readOnlyRootFilesystem"] is True, name
        assert security["allowPrivilegeEscalation"] is False, name
        assert security["capabilities"]["drop"] == ["ALL"], name
        # Something must be writable: /tmp (HOME) and the state dir, as emptyDirs.
        mounts = {m["mountPath"] for m in container(deployment)["volumeMounts"]}
        assert "/tmp" in mounts, name
        volumes = {v["name"]: v for v in pod["volumes"]}
        assert "emptyDir" in volumes["tmp"], name


def test_every_container_requests_cpu_and_memory(rendered: list[Manifest]) -> None:
    for name, deployment in by_component(rendered, "Deployment").items():
        resources = container(deployment)["resources"]
        assert {"cpu", "memory"} <= set(resources["requests"]), name
        assert "memory" in resources["limits"], name


def test_probes_point_at_ports_the_container_opens(rendered: list[Manifest]) -> None:
    for name, deployment in by_component(rendered, "Deployment").items():
        c = container(deployment)
        names = {p["name"] for p in c["ports"]}
        for kind in ("startupProbe", "livenessProbe", "readinessProbe"):
            probe = c[kind]
            if "httpGet" in probe:
                assert probe["httpGet"]["port"] in names, (name, kind)
                assert probe["httpGet"]["path"] in {"/metrics", "/healthz"}, (name, kind)
            else:
                assert probe["grpc"]["port"] == port(c, "grpc"), (name, kind)
        # Liveness must not depend on Kafka: an outage would restart every pod at once.
        assert c["livenessProbe"]["httpGet"]["path"] == "/metrics", name


def test_the_ledger_is_ready_when_its_grpc_health_service_answers(
    rendered: list[Manifest],
) -> None:
    ledger = by_component(rendered, "Deployment")["ledger"]
    c = container(ledger)
    assert c["readinessProbe"]["grpc"]["port"] == port(c, "grpc")
    service = by_component(rendered, "Service")["ledger"]
    assert {
        "name": "grpc",
        "port": port(c, "grpc"),
        "targetPort": "grpc",
        "protocol": "TCP",
        "appProtocol": "grpc",
    } in service["spec"]["ports"]


def test_the_ledger_serves_tls_from_a_secret_and_probes_the_port_instead(
    render: Callable[..., list[Manifest]],
) -> None:
    manifests = render("components.ledger.grpc.tls.existingSecret=ledger-tls")
    ledger = by_component(manifests, "Deployment")["ledger"]
    c = container(ledger)
    env = {e["name"]: e.get("value") for e in c["env"]}
    assert env["REAG_LEDGER_GRPC_TLS_CERT"] == "/etc/reag/grpc-tls/tls.crt"
    assert env["REAG_LEDGER_GRPC_TLS_KEY"] == "/etc/reag/grpc-tls/tls.key"
    mounts = {m["name"]: m for m in c["volumeMounts"]}
    assert mounts["grpc-tls"] == {
        "name": "grpc-tls",
        "mountPath": "/etc/reag/grpc-tls",
        "readOnly": True,
    }
    volumes = {v["name"]: v for v in ledger["spec"]["template"]["spec"]["volumes"]}
    assert volumes["grpc-tls"]["secret"]["secretName"] == "ledger-tls"
    # Kubernetes' gRPC probe speaks no TLS.
    assert c["readinessProbe"]["tcpSocket"]["port"] == port(c, "grpc")
    assert "grpc" not in c["readinessProbe"]
    other = container(by_component(manifests, "Deployment")["oracle"])
    assert "grpc-tls" not in {m["name"] for m in other["volumeMounts"]}


def test_each_service_reads_the_rendered_environment_as_intended(
    rendered: list[Manifest], clean_env: pytest.MonkeyPatch
) -> None:
    for name, deployment in by_component(rendered, "Deployment").items():
        c = container(deployment)
        env = environment(rendered, deployment)
        for var, value in env.items():
            clean_env.setenv(var, value)
        settings = settings_class(c["command"][2])()
        assert settings.http_host == "0.0.0.0", name
        assert settings.http_port == port(c, "http"), name
        assert settings.kafka.bootstrap_servers == "kafka:9092", name
        state = {m["name"]: m["mountPath"] for m in c["volumeMounts"]}["state"]
        assert str(settings.state_dir) == state, name
        fields = settings.model_dump()
        if name.startswith("judge-tier"):
            assert fields["tier"] == int(name.removeprefix("judge-tier")), name
        if name == "ledger":
            assert fields["ledger_grpc_port"] == port(c, "grpc")
            assert fields["ledger_grpc_host"] == "0.0.0.0"
        for var in env:
            clean_env.delenv(var)


def test_llm_and_cascade_values_reach_the_judges(
    render: Render, clean_env: pytest.MonkeyPatch
) -> None:
    manifests = render(
        "llm.model=openai:gpt-4.1-mini",
        "cascade.tierModels={gemini:gemini-2.5-flash-lite,openai:gpt-4.1-mini,gemini:gemini-2.5-flash}",
        "cascade.annotators=7",
    )
    deployment = by_component(manifests, "Deployment")["judge-tier2"]
    for var, value in environment(manifests, deployment).items():
        clean_env.setenv(var, value)
    judge = JudgeSettings()
    assert judge.tier == 2
    assert judge.model() == "openai:gpt-4.1-mini"
    assert judge.annotators == 7
    assert LLMSettings().model == "openai:gpt-4.1-mini"


def test_unknown_keys_are_rejected(helm_run: HelmRun) -> None:
    for assignment, key in (
        ("bogus=1", "bogus"),
        ("components.oracle.replicaz=2", "replicaz"),
        ("components.summarizer.enabled=true", "summarizer"),
        ("kafka.bootstrapServer=x:9092", "bootstrapServer"),
    ):
        proc = helm_run("template", "r", str(CHART), "--set", assignment)
        assert proc.returncode != 0, assignment
        assert key in proc.stderr, proc.stderr


def test_hardening_cannot_be_switched_off_by_values(helm_run: HelmRun) -> None:
    for assignment in (
        "default.securityContext.readOnlyRootFilesystem=false",
        "default.podSecurityContext.runAsNonRoot=false",
        "components.oracle.securityContext.readOnlyRootFilesystem=false",
        "kafka.securityProtocol=SASL_SSH",
    ):
        proc = helm_run("template", "r", str(CHART), "--set", assignment)
        assert proc.returncode != 0, assignment


def test_dashboards_ship_as_labelled_configmaps(rendered: list[Manifest]) -> None:
    files = sorted((CHART / "dashboards").glob("*.json"))
    assert len(files) == 3
    configmaps = {
        key: m for m in of_kind(rendered, "ConfigMap") for key in m["data"] if key.endswith(".json")
    }
    assert set(configmaps) == {f.name for f in files}
    for path in files:
        configmap = configmaps[path.name]
        assert configmap["metadata"]["labels"]["grafana_dashboard"] == "1"
        assert json.loads(configmap["data"][path.name]) == json.loads(path.read_text())


def test_dashboards_can_be_turned_off(render: Render) -> None:
    manifests = render("dashboards.enabled=false")
    assert not [
        m for m in of_kind(manifests, "ConfigMap") if "grafana_dashboard" in m["metadata"]["labels"]
    ]


def test_no_autoscaler_by_default(rendered: list[Manifest]) -> None:
    kinds = {m["kind"] for m in rendered}
    assert not kinds & {"ScaledObject", "HorizontalPodAutoscaler", "TriggerAuthentication"}
    assert not kinds & {"ServiceMonitor", "Job", "Secret"}


def test_keda_scales_each_tier_on_its_own_topic_and_consumer_group(
    render: Render, judge_subscriptions: dict[str, tuple[str, str]]
) -> None:
    tiers = sorted(judge_subscriptions)
    manifests = render(*(f"components.{t}.autoscaling.enabled=true" for t in tiers))
    scaled = by_component(manifests, "ScaledObject")
    deployments = by_component(manifests, "Deployment")
    assert set(scaled) == set(tiers)
    for tier in tiers:
        spec = scaled[tier]["spec"]
        assert spec["scaleTargetRef"]["name"] == deployments[tier]["metadata"]["name"]
        (trigger,) = spec["triggers"]
        assert trigger["type"] == "kafka"
        topic, group = judge_subscriptions[tier]
        assert trigger["metadata"]["topic"] == topic
        assert trigger["metadata"]["consumerGroup"] == group
        # The HPA owns the replica count once it exists.
        assert "replicas" not in deployments[tier]["spec"]
    assert "replicas" in deployments["oracle"]["spec"]


def test_autoscaling_is_bounded_by_the_topics_partitions(render: Render, helm_run: HelmRun) -> None:
    """Replicas past the partitions would get no partition: the chart refuses them."""
    manifests = render("components.judge-tier1.autoscaling.enabled=true")
    (scaled,) = of_kind(manifests, "ScaledObject")
    assert scaled["spec"]["maxReplicaCount"] == 12  # the chart's default partitions
    proc = helm_run(
        "template",
        "r",
        str(CHART),
        "--set",
        TOKEN_SECRET,
        "--set",
        "components.judge-tier1.autoscaling.enabled=true",
        "--set",
        "kafka.partitions=4",
    )
    assert proc.returncode != 0
    message = " ".join(proc.stderr.split())
    assert "components.judge-tier1.autoscaling.maxReplicas is 12" in message
    assert "kafka.partitions=4" in message


def test_keda_authenticates_with_the_services_kafka_credentials(render: Render) -> None:
    manifests = render(
        "components.judge-tier1.autoscaling.enabled=true",
        "kafka.securityProtocol=SASL_SSL",
        "kafka.saslMechanism=SCRAM-SHA-512",
        "kafka.saslUsername=reag",
        "kafka.tls.existingSecret=kafka-ca",
        "secrets.existingSecret=reag-secrets",
    )
    (trigger,) = by_component(manifests, "ScaledObject")["judge-tier1"]["spec"]["triggers"]
    assert trigger["metadata"]["sasl"] == "scram_sha512"
    assert trigger["metadata"]["tls"] == "enable"
    auth = by_component(manifests, "TriggerAuthentication")["judge-tier1"]
    assert trigger["authenticationRef"]["name"] == auth["metadata"]["name"]
    from_env = {e["parameter"]: e["name"] for e in auth["spec"]["env"]}
    assert from_env == {
        "username": "REAG_KAFKA__SASL_USERNAME",
        "password": "REAG_KAFKA__SASL_PASSWORD",
    }
    ca = {"parameter": "ca", "name": "kafka-ca", "key": "ca.crt"}
    assert ca in auth["spec"]["secretTargetRef"]


def test_hpa_mode_targets_the_declared_lag_metric(render: Render) -> None:
    manifests = render(
        "components.judge-tier3.autoscaling.enabled=true",
        "components.judge-tier3.autoscaling.mode=hpa",
    )
    (hpa,) = of_kind(manifests, "HorizontalPodAutoscaler")
    (metric,) = hpa["spec"]["metrics"]
    (declared,) = metrics.CONSUMER_LAG.describe()
    assert metric["external"]["metric"]["name"] == declared.name
    selector = metric["external"]["metric"]["selector"]["matchLabels"]
    assert selector == {"service": "judge-tier3", "topic": SERVICES["judge-tier3"].consumes[0]}


def test_secrets_come_from_the_existing_secret(render: Render, rendered: list[Manifest]) -> None:
    manifests = render("secrets.existingSecret=reag-secrets")
    assert not of_kind(manifests, "Secret")
    for name, deployment in by_component(manifests, "Deployment").items():
        assert {"secretRef": {"name": "reag-secrets"}} in container(deployment)["envFrom"], name
    for deployment in of_kind(rendered, "Deployment"):
        assert all("secretRef" not in s for s in container(deployment)["envFrom"])


def test_a_created_secret_holds_the_values_and_is_loaded(render: Render) -> None:
    manifests = render(
        "secrets.create=true",
        "secrets.values.REAG_STORE_DSN=postgresql+psycopg://reag:pw@db/reag",
    )
    (secret,) = of_kind(manifests, "Secret")
    assert secret["stringData"] == {"REAG_STORE_DSN": "postgresql+psycopg://reag:pw@db/reag"}
    ledger = by_component(manifests, "Deployment")["ledger"]
    assert {"secretRef": {"name": secret["metadata"]["name"]}} in container(ledger)["envFrom"]
    # The DSN holds a password: it must not leak into the ConfigMap.
    for configmap in of_kind(manifests, "ConfigMap"):
        assert "pw@db" not in json.dumps(configmap["data"])


def test_changed_settings_restart_the_pods(render: Render, rendered: list[Manifest]) -> None:
    before = by_component(rendered, "Deployment")["oracle"]
    after = by_component(render("kafka.bootstrapServers=broker:9093"), "Deployment")["oracle"]
    key = "checksum/settings"
    assert (
        before["spec"]["template"]["metadata"]["annotations"][key]
        != after["spec"]["template"]["metadata"]["annotations"][key]
    )


def test_topics_job_runs_the_kits_topic_creation(render: Render) -> None:
    (job,) = of_kind(render("topics.create=true"), "Job")
    c = job["spec"]["template"]["spec"]["containers"][0]
    assert c["command"][:2] == ["python", "-c"]
    tree = ast.parse(c["command"][2])
    imported = [
        (node.module, alias.name)
        for node in ast.walk(tree)
        if isinstance(node, ast.ImportFrom) and node.module
        for alias in node.names
    ]
    assert ("services.kit.admin", "ensure_topics") in imported
    for module, name in imported:
        assert hasattr(importlib.import_module(module), name), (module, name)
    assert c["securityContext"]["readOnlyRootFilesystem"] is True
    assert job["metadata"]["annotations"]["helm.sh/hook"] == "post-install,post-upgrade"


def test_raw_traffic_topics_are_created_with_the_charts_short_retention(
    render: Render, clean_env: pytest.MonkeyPatch
) -> None:
    manifests = render("topics.create=true", "kafka.ingressRetentionMs=1800000")
    (job,) = of_kind(manifests, "Job")
    configmaps = {m["metadata"]["name"]: m["data"] for m in of_kind(manifests, "ConfigMap")}
    for source in job["spec"]["template"]["spec"]["containers"][0]["envFrom"]:
        if "configMapRef" in source:
            for var, value in configmaps[source["configMapRef"]["name"]].items():
                clean_env.setenv(var, value)
    kafka = ServiceSettings().kafka
    retention = {spec.name: topic_configs(spec, kafka).get("retention.ms") for spec in TOPICS}
    assert {name for name, ms in retention.items() if ms} == {TRAFFIC, OTLP_SPANS}
    assert retention[TRAFFIC] == retention[OTLP_SPANS] == "1800000"
    shared = [m["data"] for m in of_kind(render(), "ConfigMap") if "REAG_LOG_LEVEL" in m["data"]]
    assert [data["REAG_KAFKA__INGRESS_RETENTION_MS"] for data in shared] == ["3600000"]


def test_service_monitor_keeps_reags_own_service_label(render: Render) -> None:
    (monitor,) = of_kind(render("serviceMonitor.enabled=true"), "ServiceMonitor")
    (endpoint,) = monitor["spec"]["endpoints"]
    assert endpoint["port"] == "http"
    assert endpoint["path"] == "/metrics"
    assert endpoint["honorLabels"] is True


GRPC_REFUSAL = "neither a bearer token nor TLS"


def test_grpc_without_token_or_tls_does_not_render_and_says_what_to_set(
    helm_run: HelmRun,
) -> None:
    proc = helm_run("template", "r", str(CHART))
    assert proc.returncode != 0
    message = " ".join(proc.stderr.split())
    assert GRPC_REFUSAL in message
    for value in (
        "grpc.token.existingSecret",
        "secrets.values.REAG_LEDGER_GRPC_TOKEN",
        "components.ledger.grpc.tls.existingSecret",
        "grpc.allowInsecure=true",
    ):
        assert value in message, value


@pytest.mark.parametrize(
    "sets",
    [
        (),  # the token Secret the render fixture adds
        ("secrets.create=true", "secrets.values.REAG_LEDGER_GRPC_TOKEN=t0ken"),
        ("components.ledger.grpc.tls.existingSecret=ledger-tls",),
        ("grpc.allowInsecure=true",),
    ],
)
def test_grpc_renders_with_a_token_tls_or_an_explicit_insecure_choice(
    render: Render, sets: tuple[str, ...], clean_env: pytest.MonkeyPatch
) -> None:
    manifests = render(*sets, token=not sets)
    env = environment(manifests, by_component(manifests, "Deployment")["ledger"])
    # Only the explicit choice lets the ledger listen beyond loopback without a token.
    assert (env.get("REAG_LEDGER_GRPC_ALLOW_INSECURE") == "true") == (
        sets == ("grpc.allowInsecure=true",)
    )
    assert of_kind(manifests, "NetworkPolicy")
    if "REAG_LEDGER_GRPC_TLS_CERT" in env:
        return  # LedgerSettings would look for the certificate file
    for var, value in env.items():
        clean_env.setenv(var, value)
    settings = LedgerSettings()
    token = settings.ledger_grpc_token
    # The ledger the chart renders passes its own bind check (reag.exposure).
    refuse_open_bind(
        settings.ledger_grpc_host,
        token=token.get_secret_value() if token is not None else None,
        tls=False,
        allow_insecure=settings.ledger_grpc_allow_insecure,
        setting="REAG_LEDGER_GRPC_ALLOW_INSECURE",
    )


def test_the_token_secret_reaches_the_grpc_component_only(render: Render) -> None:
    deployments = by_component(render("grpc.token.key=token"), "Deployment")
    (var,) = [
        v for v in container(deployments["ledger"])["env"] if v["name"] == "REAG_LEDGER_GRPC_TOKEN"
    ]
    assert var["valueFrom"]["secretKeyRef"] == {"name": "reag-grpc-token", "key": "token"}
    other = container(deployments["oracle"]).get("env", [])
    assert "REAG_LEDGER_GRPC_TOKEN" not in {v["name"] for v in other}


def test_the_network_policy_admits_grpc_from_the_namespace_and_http_from_anywhere(
    rendered: list[Manifest],
) -> None:
    (policy,) = of_kind(rendered, "NetworkPolicy")
    deployments = by_component(rendered, "Deployment")
    selector = policy["spec"]["podSelector"]["matchLabels"]
    for name, deployment in deployments.items():
        labels = deployment["spec"]["template"]["metadata"]["labels"]
        assert selector.items() <= labels.items(), name
    assert policy["spec"]["policyTypes"] == ["Ingress"]
    rules = {
        tuple(p["port"] for p in rule["ports"]): rule["from"] for rule in policy["spec"]["ingress"]
    }
    ledger = container(deployments["ledger"])
    assert rules == {
        (port(ledger, "http"),): [{"namespaceSelector": {}}],
        (port(ledger, "grpc"),): [{"podSelector": {}}],
    }


def test_the_network_policy_can_be_left_to_the_platform(render: Render) -> None:
    assert not of_kind(render("networkPolicy.enabled=false"), "NetworkPolicy")
