"""A job whose log is not UTF-8 (left31): a tool built on Chinese Windows, or run in a
`zh_CN.GBK` locale, writes GBK; an old European one Latin-1. The job page, its search, the
admin's download and the failure reasons read from a log show a GBK line as Chinese and a
byte no encoding explains as U+FFFD, never a 500 (jobs.shim.log_text); the owner's download
is the file as written. Real bytes, written by a real local job."""

from __future__ import annotations

import html

import pytest
from django.test import Client
from django.urls import reverse

from jobs.logs import replica_log_path, tail_lines
from jobs.models import Job, JobStatus
from jobs.shim import log_text
from jobs.worker import Worker

from .runner_helpers import make_spec, run_until, runner_settings, status_of, submit  # noqa: F401

pytestmark = pytest.mark.usefixtures("runner_settings")

TRAINED = "训练完成，损失 0.25"  # "training done, loss 0.25"
OUT_OF_MEMORY = "错误：内存不足"  # "error: out of memory"


@pytest.mark.parametrize(
    ("written", "shown"),
    [
        (TRAINED.encode("gbk"), TRAINED),
        (TRAINED.encode("gb18030"), TRAINED),
        (TRAINED.encode("utf-8"), TRAINED),
        # ASCII first, then GBK: a tool's English prefix before its Chinese message.
        (b"step 3: " + OUT_OF_MEMORY.encode("gbk"), "step 3: " + OUT_OF_MEMORY),
        # Latin-1 whose bytes GB18030 does not read either: each byte is U+FFFD.
        ("café au lait".encode("latin-1"), "caf\ufffd au lait"),
        # UTF-8 Chinese, then a stray byte: UTF-8 still, the stray byte U+FFFD (GB18030
        # would garble the Chinese before it).
        (TRAINED.encode("utf-8") + b" \xff", TRAINED + " \ufffd"),
        # A long line's piece cut inside a character: UTF-8, its cut end U+FFFD.
        (OUT_OF_MEMORY.encode("utf-8")[:-1], OUT_OF_MEMORY[:-1] + "\ufffd"),
        (b"\x00\xfe\xfe\xfe", "\x00\ufffd\ufffd\ufffd"),
    ],
)
def test_a_log_line_reads_as_utf_8_else_as_gbk_else_with_replacement_characters(
    tmp_path, written, shown
):
    log = tmp_path / "log"
    log.write_bytes(b"first\n" + written + b"\nlast\n")

    assert tail_lines(log, 3) == ["first", shown, "last"]
    assert log_text(written) == shown


def gbk_job(owner) -> Job:
    """A job that prints a GBK line and a Latin-1 one, then fails with a GBK error."""
    lines = [TRAINED.encode("gbk"), "Müller café".encode("latin-1"), OUT_OF_MEMORY.encode("gbk")]
    printed = "; ".join("printf '" + "".join(f"\\{b:03o}" for b in line) + "\\n'" for line in lines)
    job = submit(owner, make_spec(f"{printed}; exit 3"))
    run_until(Worker(), lambda: status_of(job) == JobStatus.FAILED, what="failed")
    return job


def test_a_job_that_prints_gbk_shows_it_readably_on_its_page_and_in_a_search(alice, alice_client):
    job = gbk_job(alice)

    page = alice_client.get(reverse("job-detail", args=[job.public_id]))
    found = alice_client.get(
        reverse("job-detail", args=[job.public_id]), {"replica": "master-0", "q": "内存不足"}
    )

    assert page.status_code == 200
    shown = html.unescape(page.content.decode())
    assert TRAINED in shown and OUT_OF_MEMORY in shown
    assert "M\ufffdller caf\ufffd" in shown  # Latin-1: neither UTF-8 nor all GB18030
    assert found.status_code == 200
    results = html.unescape(found.content.decode())
    assert "<mark>内存不足</mark>" in results


def test_the_owners_download_is_the_log_as_written_and_the_admins_reads_gbk(
    alice, alice_client, superuser
):
    job = gbk_job(alice)
    admin = Client()
    admin.force_login(superuser)

    owners = alice_client.get(reverse("job-log-download", args=[job.public_id, "master-0"]))
    staffs = admin.get(f"/admin/jobs/job/{job.pk}/logs/master-0/download/")

    raw = b"".join(owners.streaming_content)
    assert TRAINED.encode("gbk") in raw  # byte for byte, for iconv or an editor's GBK
    assert raw == replica_log_path(job.public_id, "master-0").read_bytes()
    assert staffs.status_code == 200
    text = b"".join(staffs.streaming_content).decode("utf-8")
    assert TRAINED in text and OUT_OF_MEMORY in text
