"""Messages that were English only, said in the reader's language (lang24): the API's
not-found and not-supported answers (its language: Accept-Language, else English), the
database-down answers (the page's: the language cookie, else Accept-Language), and the
console's own words around py-spy in a hang analysis. Codes stay as AIHC's."""

from __future__ import annotations

import ast
import json
import os
import subprocess
import sys
from pathlib import Path

import httpx
import pytest
from django.utils import translation

from jobs import stacks

from . import test_api as v1
from .runner_helpers import runner_settings  # noqa: F401
from .signed_requests import signed_request
from .test_api import body

wsgi, alice_key, api = v1.wsgi, v1.alice_key, v1.api

pytestmark = pytest.mark.usefixtures("runner_settings")

ROOT = Path(__file__).resolve().parent.parent


def answer(wsgi, api_key, path: str, query: list[tuple[str, str]], **headers) -> httpx.Response:
    """A GET signed as the SDKs sign it (host and x-bce-date), with the headers given."""
    return signed_request(wsgi, api_key, method="GET", path=path, query=query, headers=headers)


def in_both(wsgi, api_key, path: str, query: list[tuple[str, str]], **headers):
    """(status, code, message) as a script without Accept-Language reads it, then as one
    asking for Chinese."""
    said = []
    for language in ({}, {"Accept-Language": "zh-CN,zh;q=0.9"}):
        r = answer(wsgi, api_key, path, query, **headers, **language)
        said.append((r.status_code, r.json()["code"], r.json()["message"]))
    return said


def test_the_apis_not_found_answers_keep_aihcs_codes_and_follow_accept_language(
    wsgi, api, alice_key
):
    job_id = api.create_job(pool="local", body=body())["jobId"]
    pool = [("resourcePoolId", "local")]

    assert in_both(wsgi, alice_key, "/api/v1/aijobs/job-nowhere", pool) == [
        (404, "JobNotFound", "Job job-nowhere not found."),
        (404, "JobNotFound", "任务 job-nowhere 不存在。"),
    ]
    assert in_both(wsgi, alice_key, f"/api/v1/aijobs/{job_id}/pods/worker-9/events", pool) == [
        (404, "PodNotFound", "Pod worker-9 not found."),
        (404, "PodNotFound", "Pod worker-9 不存在。"),
    ]
    assert in_both(wsgi, alice_key, "/api/v1/resourcepools/local/queue/nowhere", []) == [
        (404, "QueueNotFound", "Queue nowhere not found in local."),
        (404, "QueueNotFound", "资源池 local 中不存在队列 nowhere。"),
    ]
    assert in_both(wsgi, alice_key, "/api/v1/resourcepools/cce-nowhere", []) == [
        (404, "ResourcePoolNotFound", "Resource pool cce-nowhere not found."),
        (404, "ResourcePoolNotFound", "资源池 cce-nowhere 不存在。"),
    ]
    terminal = in_both(wsgi, alice_key, f"/api/v1/aijobs/{job_id}/pods/master-0/webterminal", pool)
    assert [(status, code) for status, code, _ in terminal] == [(400, "NotSupported")] * 2
    assert terminal[0][2].startswith("This console has no web terminal: ")
    assert terminal[1][2].startswith("本控制台没有 Web 终端：")


def test_v2s_queue_not_found_and_batch_stops_not_found_jobs_follow_accept_language(wsgi, alice_key):
    v2 = {"X-API-Version": "v2"}
    queue = [("action", "DescribeQueue"), ("queueId", "cce-nowhere:default")]
    assert in_both(wsgi, alice_key, "/", queue, **v2) == [
        (404, "QueueNotFound", "Queue cce-nowhere:default not found."),
        (404, "QueueNotFound", "队列 cce-nowhere:default 不存在。"),
    ]

    query = [("action", "BatchStopJobs"), ("resourcePoolId", "local")]
    failed = []
    for language in ({}, {"Accept-Language": "zh-CN"}):
        r = signed_request(
            wsgi,
            alice_key,
            method="POST",
            path="/",
            query=query,
            headers={**v2, **language},
            json={"jobList": [{"jobId": "gone"}]},
        )
        assert r.status_code == 200
        failed.append(r.json()["result"]["failedList"])

    assert failed == [
        [{"jobId": "gone", "success": False, "errorMsg": "Job gone not found."}],
        [{"jobId": "gone", "success": False, "errorMsg": "任务 gone 不存在。"}],
    ]


# Requests made with Django's test client in a process whose database cannot be opened (its
# folder does not exist), in each language a page or a script can ask for.
DATABASE_DOWN = """
import json, django
django.setup()
from datetime import UTC, datetime
from django.test import Client
from jobs.aihc.signer import authorization
client = Client(HTTP_HOST="127.0.0.1")
client.cookies["sessionid"] = "abcdefgh12345678"
said = {}
for name, headers, cookie in (
    ("page", {}, None),
    ("page_en_browser", {"HTTP_ACCEPT_LANGUAGE": "en-US,en;q=0.9"}, None),
    ("page_zh_cookie_en_browser", {"HTTP_ACCEPT_LANGUAGE": "en-US"}, "zh-hans"),
    ("page_en_cookie", {}, "en"),
):
    client.cookies.pop("django_language", None)
    if cookie:
        client.cookies["django_language"] = cookie
    r = client.get("/", **headers)
    said[name] = [r.status_code, r.content.decode(), r.get("Retry-After")]
client.cookies.pop("django_language", None)
for name, path, language, version in (
    ("v1", "/api/v1/aijobs", None, None),
    ("v1_zh", "/api/v1/aijobs", "zh-CN", None),
    ("v2_zh", "/", "zh-CN", "v2"),
):
    now = datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    headers = {"host": "127.0.0.1", "x-bce-date": now}
    signed = authorization(access_key="a" * 32, secret_key="b" * 32, method="GET",
        path=path, params=[], headers=headers, timestamp=now)
    extra = {"HTTP_ACCEPT_LANGUAGE": language} if language else {}
    if version:
        extra["HTTP_X_API_VERSION"] = version
    r = client.get(path, HTTP_AUTHORIZATION=signed, HTTP_X_BCE_DATE=now, **extra)
    said[name] = [r.status_code, r["Content-Type"], r.json(), r.get("Retry-After"),
        r.get("x-bce-request-id")]
print(json.dumps(said))
"""


def test_the_database_down_page_and_api_answer_speak_the_requests_language(tmp_path):
    env = {
        **os.environ,
        "DJANGO_SETTINGS_MODULE": "console.settings",
        "CONSOLE_VAR_DIR": str(tmp_path / "var"),
        "DATABASE_URL": f"sqlite:///{tmp_path / 'gone' / 'console.sqlite3'}",
        "LANGUAGE_CODE": "zh-hans",
    }
    done = subprocess.run(
        [sys.executable, "-c", DATABASE_DOWN],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        check=True,
    )
    said = json.loads(done.stdout.splitlines()[-1])

    def page(name: str) -> str:
        status, content, retry_after = said[name]
        assert (status, retry_after) == (503, "30"), name
        return content

    chinese, english = page("page"), page("page_en_browser")
    assert (
        '<html lang="zh-hans">' in chinese
        and "<h1 data-request-error>数据库暂时无法访问</h1>" in chinese
    )
    assert "管理员可在服务器日志和 /healthz 中看到原因" in chinese
    assert "The database cannot be reached" not in chinese
    assert (
        '<html lang="en">' in english
        and "<h1 data-request-error>The database cannot be reached</h1>" in english
    )
    assert "administrators see why in the server's log and at /healthz" in english
    assert "数据库" not in english
    unreachable_zh = "<h1 data-request-error>数据库暂时无法访问</h1>"
    assert unreachable_zh in page("page_zh_cookie_en_browser")  # the switch's
    assert "<h1 data-request-error>The database cannot be reached</h1>" in page("page_en_cookie")
    for name, message in (
        ("v1", "The console cannot reach its database right now; try again later."),
        ("v1_zh", "控制台暂时无法连接数据库，请稍后重试。"),
        ("v2_zh", "控制台暂时无法连接数据库，请稍后重试。"),  # a v2 call: JSON, not the page
    ):
        status, content_type, error, retry_after, request_id = said[name]
        assert (status, content_type, retry_after) == (503, "application/json", "30"), name
        assert (error["code"], error["message"]) == ("ServiceUnavailable", message), name
        assert request_id == error["requestId"], name  # BCE's shape, as the API's other errors
    assert "Traceback" not in done.stderr


# -- py-spy's reasons in a hang analysis ---------------------------------------------------


def shown(detail: str, language: str) -> str:
    with translation.override(language):
        return stacks.reason_text({"error": "unreadable", "detail": detail})


def test_the_consoles_own_reasons_around_py_spy_are_said_in_the_pages_language_and_py_spys_as_it_wrote_them():
    for stored, english, chinese in (
        (
            stacks.ENDED["detail"],
            "the process ended while it was read",
            "读取期间该进程已结束",
        ),
        ("setpriv (util-linux) is not installed", None, "未安装 setpriv（util-linux）"),
        ("py-spy's output was larger than 64 MB", None, "py-spy 的输出超过了 64 MB"),
        (stacks._py_spy_error(b"", -9), "py-spy was ended by signal 9", "py-spy 被信号 9 终止"),
        (
            stacks._py_spy_error(b"", 3),
            "py-spy failed (exit status 3)",
            "py-spy 运行失败（退出状态 3）",
        ),
        (
            # jobs/native_reader.py's, as py-spy's Error: line
            stacks._py_spy_error(
                b"Error: /bin/true is not a static program: it is not run in a job's namespaces\n",
                2,
            ),
            "/bin/true is not a static program: it is not run in a job's namespaces",
            "/bin/true 不是静态链接的程序：不会在任务的命名空间中运行它",
        ),
    ):
        assert shown(stored, "en") == f"Its stacks could not be read: {english or stored}"
        assert shown(stored, "zh-hans") == f"无法读取其调用栈：{chinese}"
    # py-spy's own words (its reason for a process it may not read, a kernel's): as written.
    for words in (
        "Permission Denied: Try running again with elevated permissions by going 'sudo !!'",
        "Failed to find python version from target process",
        "No such process (os error 3)",
    ):
        detail = stacks._py_spy_error(f"Error: {words}\n".encode(), 1)
        assert shown(detail, "zh-hans") == f"无法读取其调用栈：{words}"
        assert shown(detail, "en") == f"Its stacks could not be read: {words}"


def test_a_failed_native_read_says_the_native_readers_reason_in_the_pages_language():
    process = {
        "pid": 7,
        "command": "python train.py",
        "threads": [],
        "native_error": {
            "error": "unreadable",
            "detail": "native frames are read only of jobs run as users of their own",
        },
    }
    replicas = [{"label": "master-0", "processes": [process]}]

    with translation.override("zh-hans"):
        [(who, why)] = stacks.unread(replicas)

    assert who == "master-0 pid 7 (python train.py)"
    assert why == (
        "未能读取其原生栈帧，只显示其 Python 栈帧：只有以各自的用户运行的任务才能读取原生栈帧"
    )


def test_every_reason_the_native_reader_writes_is_one_the_console_says_in_either_language():
    # jobs/native_reader.py runs on its own (it imports nothing of the console) and writes its
    # reasons in English: each fail() wording must stay one of stacks.CONSOLE_DETAILS.
    source = (ROOT / "jobs" / "native_reader.py").read_text()
    tree = ast.parse(source)
    constants = {
        target.id: node.value.value
        for node in tree.body
        if isinstance(node, ast.Assign) and isinstance(node.value, ast.Constant)
        for target in node.targets
        if isinstance(target, ast.Name)
    }
    written = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and getattr(node.func, "id", "") == "fail":
            [argument] = node.args
            if isinstance(argument, ast.Constant):
                written.append(argument.value)
            elif isinstance(argument, ast.Name):
                written.append(constants[argument.id])
            else:  # an f-string: its values replaced by a stand-in
                written.append(
                    "".join(
                        part.value if isinstance(part, ast.Constant) else "x86"
                        for part in argument.values
                    )
                )
    # Not the usage line (never shown: the console runs the reader right), nor an OS error's
    # own words (checked()'s, "unshare: Operation not permitted").
    said_again = [
        text
        for text in written
        if not text.startswith("usage:") and text.replace("x86", "").strip(": ")
    ]

    assert len(said_again) >= 8
    for text in said_again:
        assert shown(text, "zh-hans") != f"无法读取其调用栈：{text}", text
