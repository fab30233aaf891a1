"""The chart's reag review --web: off by default, tokens required, TLS from a Secret."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from tests.unit.deploy.conftest import HelmError

pytestmark = pytest.mark.slow

Manifest = dict[str, Any]
Render = Callable[..., list[Manifest]]


def review_web(manifests: list[Manifest], kind: str) -> list[Manifest]:
    return [
        m
        for m in manifests
        if m["kind"] == kind
        and m["metadata"]["labels"].get("app.kubernetes.io/component") == "review-web"
    ]


def test_off_by_default(rendered: list[Manifest]) -> None:
    assert review_web(rendered, "Deployment") == []


def test_needs_the_reviewers_tokens(render: Render) -> None:
    with pytest.raises(HelmError, match="tokensSecret is required"):
        render("reviewWeb.enabled=true")


def test_serves_the_queue_with_tokens_and_tls(render: Render) -> None:
    manifests = render(
        "reviewWeb.enabled=true",
        "reviewWeb.tokensSecret=review-tokens",
        "reviewWeb.tls.existingSecret=review-tls",
        "reviewWeb.reviewersPerItem=2",
    )
    (deployment,) = review_web(manifests, "Deployment")
    (service,) = review_web(manifests, "Service")
    (c,) = deployment["spec"]["template"]["spec"]["containers"]
    command = c["command"]
    assert command[:5] == ["python", "-m", "shell.cli.main", "review", "--web"]
    assert command[command.index("--host") + 1] == "0.0.0.0"
    assert command[command.index("--reviewers-per-item") + 1] == "2"
    env = {e["name"]: e.get("value") for e in c["env"]}
    assert env["REAG_REVIEW_TOKENS_FILE"] == "/etc/reag/review-tokens/tokens"
    assert env["REAG_REVIEW_TLS_CERTFILE"] == "/etc/reag/review-tls/tls.crt"
    assert c["readinessProbe"]["httpGet"]["scheme"] == "HTTPS"
    volumes = {v["name"]: v for v in deployment["spec"]["template"]["spec"]["volumes"]}
    assert volumes["review-tokens"]["secret"]["secretName"] == "review-tokens"
    assert volumes["review-tls"]["secret"]["secretName"] == "review-tls"
    assert c["image"].endswith("-local")
    assert service["spec"]["ports"][0]["name"] == "http"
