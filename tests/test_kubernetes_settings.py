"""KUBERNETES_* settings: read at start, a bad value stops the console naming the variable;
inside a pod the service account's token, CA and namespace are the defaults."""

from __future__ import annotations

from pathlib import Path

import certifi
import pytest

from tests.test_foundation import manage

ENABLED = {
    "CONSOLE_BACKENDS": "local,kubernetes",
    "KUBERNETES_API_URL": "https://10.0.0.1:6443",
    "KUBERNETES_TOKEN": "a-token",
    # Not the machine's own service account, should the tests run in a pod.
    "KUBERNETES_SERVICEACCOUNT_DIR": "/nonexistent",
}
SHOW = (
    "from django.conf import settings as s; from jobs.kubernetes.config import Config; "
    "c = Config.from_settings(s); print(c.server, c.token_file, c.ca_file, c.namespaces, "
    "c.queues, sorted(c.cluster.accelerators), c.cluster.claims, c.cluster.priority_classes, "
    "c.cluster.tolerations, c.cluster.image_pull_secrets)"
)


@pytest.mark.parametrize(
    "variables",
    [
        {"KUBERNETES_API_URL": "10.0.0.1:6443"},
        {"KUBERNETES_TOKEN": "", "KUBERNETES_TOKEN_FILE": "/no/such/token"},
        {"KUBERNETES_CA_FILE": "/no/such/ca.crt"},
        {"KUBERNETES_NAMESPACES": "Team_A"},
        {"KUBERNETES_QUEUES": "default,GPU queue"},
        {"KUBERNETES_ACCELERATORS": "a800"},
        {"KUBERNETES_ACCELERATORS": "baidu.com/a800=nvidia.com/gpu;gpu"},
        {"KUBERNETES_VOLUMES": "bos=datasets"},
        {"KUBERNETES_HOST_PATHS": "scratch=data/scratch"},
        {"KUBERNETES_PRIORITY_CLASSES": "urgent=training-high"},
        {"KUBERNETES_TOLERATIONS": "dedicated=training:NoSchedul"},
        {"KUBERNETES_IMAGE_PULL_SECRETS": "Reg_Cred"},
        {"KUBERNETES_CACHE_SECONDS": "-1"},
        {"KUBERNETES_READ_TIMEOUT": "0"},
        {"KUBERNETES_TRAINING_API": "v2"},
    ],
    ids=lambda variables: list(variables)[-1],
)
def test_startup_stops_naming_the_kubernetes_variable_whose_value_is_bad(tmp_path, variables):
    result = manage(tmp_path, "check", **{**ENABLED, **variables})

    assert result.returncode == 1
    assert result.stderr.startswith(f"Configuration error: {list(variables)[-1]}")
    assert "Traceback" not in result.stderr
    assert "a-token" not in result.stderr


def test_a_ca_file_without_certificates_stops_the_console(tmp_path):
    ca = tmp_path / "ca.crt"
    ca.write_text("not a certificate\n")

    result = manage(tmp_path, "check", **ENABLED, KUBERNETES_CA_FILE=str(ca))

    assert result.returncode == 1
    assert result.stderr.startswith(
        f"Configuration error: KUBERNETES_CA_FILE={ca} holds no PEM certificates"
    )


def test_without_an_api_server_address_or_token_the_console_does_not_start(tmp_path):
    no_url = manage(
        tmp_path,
        "check",
        CONSOLE_BACKENDS="local,kubernetes",
        KUBERNETES_TOKEN="t",
        KUBERNETES_SERVICE_HOST="",
    )
    no_token = manage(
        tmp_path,
        "check",
        CONSOLE_BACKENDS="local,kubernetes",
        KUBERNETES_API_URL="https://10.0.0.1:6443",
        KUBERNETES_SERVICEACCOUNT_DIR=str(tmp_path / "none"),
    )

    assert no_url.stderr.startswith("Configuration error: KUBERNETES_API_URL is not set")
    assert no_token.stderr.startswith("Configuration error: KUBERNETES_TOKEN")


def test_in_a_pod_the_service_account_and_the_service_address_are_the_defaults(tmp_path):
    account = tmp_path / "serviceaccount"
    account.mkdir()
    (account / "token").write_text("projected-token\n")
    (account / "ca.crt").write_text(Path(certifi.where()).read_text())
    (account / "namespace").write_text("ml-jobs\n")

    result = manage(
        tmp_path,
        "shell",
        "-c",
        SHOW,
        CONSOLE_BACKENDS="local,kubernetes",
        KUBERNETES_SERVICEACCOUNT_DIR=str(account),
        KUBERNETES_SERVICE_HOST="10.96.0.1",
        KUBERNETES_SERVICE_PORT="443",
    )

    assert result.returncode == 0, result.stderr
    assert result.stdout.split("\n")[-2] == (
        f"https://10.96.0.1:443 {account / 'token'} {account / 'ca.crt'} ['ml-jobs'] "
        "['default'] ['nvidia.com/gpu'] {} {} () ()"
    )


def test_queues_cards_volumes_and_priority_classes_are_read_as_written(tmp_path):
    result = manage(
        tmp_path,
        "shell",
        "-c",
        SHOW,
        **ENABLED,
        KUBERNETES_NAMESPACES="team-a, team-b",
        KUBERNETES_QUEUES="gpu-queue,cpu-queue",
        KUBERNETES_ACCELERATORS=(
            "baidu.com/a800_80g_cgpu=nvidia.com/gpu;nvidia.com/gpu.product=A800,nvidia.com/gpu"
        ),
        KUBERNETES_VOLUMES="pfs=datasets,nas=home",
        KUBERNETES_PRIORITY_CLASSES="high=training-high",
        KUBERNETES_TOLERATIONS="dedicated=training:NoSchedule,nvidia.com/gpu",
        KUBERNETES_IMAGE_PULL_SECRETS="regcred",
    )

    assert result.returncode == 0, result.stderr
    assert result.stdout.split("\n")[-2] == (
        "https://10.0.0.1:6443   ['team-a', 'team-b'] ['gpu-queue', 'cpu-queue'] "
        "['baidu.com/a800_80g_cgpu', 'nvidia.com/gpu'] "
        "{'datasets': 'pfs', 'home': 'nas'} {'high': 'training-high'} "
        "({'key': 'dedicated', 'operator': 'Equal', 'value': 'training', 'effect': "
        "'NoSchedule'}, {'key': 'nvidia.com/gpu', 'operator': 'Exists'}) ('regcred',)"
    )


def test_an_unreadable_service_account_namespace_does_not_stop_a_console_without_kubernetes(
    tmp_path,
):
    account = tmp_path / "serviceaccount"
    account.mkdir()
    (account / "namespace").write_bytes(b"\xff\xfe not text")

    result = manage(tmp_path, "check", KUBERNETES_SERVICEACCOUNT_DIR=str(account))

    assert result.returncode == 0, result.stderr
