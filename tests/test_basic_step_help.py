"""The basic step's helps against seed 000 (qa109, a long-time AIHC user): 资源池 and 队列 say what
they choose, for the console's pools, and 日志持久化 says what it does in the seed's words, not
"after the job ends", which no pool of the console does."""

from __future__ import annotations

import re

import pytest

from .test_wizard import new_draft, step_url


@pytest.fixture(autouse=True)
def _local_pool(settings, tmp_path):
    settings.LOCAL_VOLUMES = f"scratch={tmp_path}"


def help_of(html: str, field: str) -> str:
    return re.search(rf'<div id="{field}_helptext"[^>]*>(.*?)</div>', html, re.S)[1]


def test_the_pool_and_queue_say_what_they_choose_in_chinese(alice_client):
    draft = new_draft(alice_client)

    html = alice_client.get(step_url(draft, "basic")).content.decode()

    assert help_of(html, "id_resource_pool").startswith("选择任务部署的资源池：本地资源池")
    assert help_of(html, "id_queue").startswith("选择任务需要部署在资源池下的队列")


def test_log_persistence_says_it_keeps_logs_in_bls_not_when_the_job_ends(alice_client):
    draft = new_draft(alice_client)

    html = alice_client.get(step_url(draft, "basic")).content.decode()

    said = help_of(html, "id_log_persistence")
    assert said.startswith("开启日志持久化功能会将您的任务日志持久化保存到日志服务（BLS）中")
    assert "任务结束后" not in said
    assert "Kubernetes 资源池暂不支持" in said
