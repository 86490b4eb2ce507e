"""A line with no end: a progress bar (tqdm) redraws itself after "\\r" for hours and the
kubelet counts lines by "\\n" alone, so its log is one line of hundreds of MB; so is a tool
that never ends its line. A Kubernetes download read such a line whole into memory, masked
it and sent it in one write, and the job page's tail of it held the whole answer (session 34
left it). Now a download reads a line DOWNLOAD_LINE_CHARS at a time, masking across each cut
(a secret the cut falls inside is masked whole), and a tail keeps the answer's last
MAX_TAIL_BYTES. Against the strict fake with a generated log of a few MB, the bounds made
small through the constants the code reads; memory measured as
tests/test_log_download_memory.py measures it (tracemalloc)."""

from __future__ import annotations

import hashlib
import tracemalloc
import uuid

import pytest
from django.test import Client
from django.urls import reverse

from jobs import admin, logs, views
from jobs import spec as S
from jobs.backends import kubernetes as kubernetes_backend
from jobs.logs import replica_log_path
from jobs.models import Job, JobReplica
from jobs.services import jobs_submit
from jobs.worker import Worker
from tests import test_log_download_memory as memory
from tests.fake_kubernetes import FakeKubernetes
from tests.runner_helpers import make_spec, submit

cluster = memory.cluster  # the strict fake, as the memory tests start it
SECRET = memory.SECRET
UNITS = 12_000  # of 999 characters each, no line end: one line of 12 MB
LINE_CHARS = 4096  # DOWNLOAD_LINE_CHARS in these tests
MEMORY_BOUND = 6 * 1024 * 1024  # the old code peaked at over 36 MiB for this line


def unit(i: int) -> str:
    """Unit i of the one long line: its number and the secret at a moving place."""
    return memory.log_line(i)


def job_with_one_long_line(cluster: FakeKubernetes, owner, *, end: str = "") -> Job:
    """A Running PyTorchJob with a secret env, its master's log UNITS units each ended by
    `end` ("": all of it one line with no end)."""
    spec = S.JobSpec(
        name="progress-bar",
        resource_pool_id="k8s-default",
        framework=S.PYTORCH,
        image="registry.example.com/train:1.0",
        command="python train.py",
        roles=[S.Role("master", 1)],
        envs=[S.Env("HF_TOKEN", SECRET, secret=True)],
    )
    jobs_submit(owner=owner, spec=spec, submit_key=str(uuid.uuid4()), backend="kubernetes")
    Worker().dispatch_remote()
    job = Job.objects.get(backend="kubernetes")
    cluster.run_pods(job.external_id)
    Worker().sync_remote()  # its replicas
    cluster.add_generated_log(f"{job.external_id}-master-0", unit, UNITS, end=end)
    return job


def read_with_peak(client: Client, url: str) -> tuple[int, str, int, int]:
    """(status, the answer's SHA-256, its longest piece, peak bytes allocated while it was
    read): read through and dropped a piece at a time, as a browser saving it does."""
    digest = hashlib.sha256()
    longest = 0
    tracemalloc.start()
    try:
        tracemalloc.reset_peak()
        answer = client.get(url)
        for piece in answer.streaming_content if answer.streaming else [answer.content]:
            digest.update(piece)
            longest = max(longest, len(piece))
        answer.close()
        _current, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    return answer.status_code, digest.hexdigest(), longest, peak


def sha256(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


@pytest.fixture
def small_line_bound(monkeypatch):
    monkeypatch.setattr(logs, "DOWNLOAD_LINE_CHARS", LINE_CHARS)


def test_some_secret_of_the_long_line_straddles_a_cut():
    """What the tests below rely on: the line's cuts fall inside secrets."""
    line_start = 0
    straddled = 0
    for i in range(UNITS):
        start = line_start + unit(i).index(SECRET)
        if start // LINE_CHARS != (start + len(SECRET) - 1) // LINE_CHARS:
            straddled += 1
        line_start += len(unit(i))
    assert straddled > 10


@pytest.mark.parametrize("download", ["owner", "admin"])
def test_a_kubernetes_log_of_one_endless_line_downloads_whole_and_masked_in_bounded_writes(
    cluster, alice, alice_en, reviewer, client, small_line_bound, download
):
    job = job_with_one_long_line(cluster, alice)
    if download == "owner":
        url, reader = reverse("job-log-download", args=[job.public_id, "master-0"]), alice_en
    else:
        client.force_login(reviewer)
        url, reader = reverse("admin:jobs_job_log_download", args=[job.pk, "master-0"]), client

    status, digest, longest, peak = read_with_peak(reader, url)

    assert status == 200
    # As written, masked: no newline added inside the line, nothing lost, no secret left (the
    # staff's download ends the log's last line, as it ends every line).
    written = "".join(unit(i) for i in range(UNITS)).replace(SECRET, "******")
    assert digest == sha256(written if download == "owner" else written + "\n")
    assert longest <= logs.DOWNLOAD_PIECE_CHARS + LINE_CHARS
    assert peak < MEMORY_BOUND, f"peak {peak / 2**20:.1f} MiB"


def test_a_progress_bars_redraws_download_with_their_carriage_returns_as_written(
    cluster, alice, alice_en, small_line_bound
):
    """Until left38 each "\\r" became a newline in the download, which is the log as the pod
    wrote it (a local replica's is its file)."""
    job = job_with_one_long_line(cluster, alice, end="\r")

    status, digest, _longest, _peak = read_with_peak(
        alice_en, reverse("job-log-download", args=[job.public_id, "master-0"])
    )

    assert status == 200
    assert digest == sha256("".join(unit(i) + "\r" for i in range(UNITS)).replace(SECRET, "******"))


def test_the_masking_of_a_cut_line_holds_back_what_a_secret_may_start_with():
    """A secret cut in two by DOWNLOAD_LINE_CHARS is masked whole; text that only starts like
    one is given as written, and a line's end starts it afresh."""
    parts = ["step 1 hf-very-sec", "ret-token-value and hf-very", "-secret\n", "hf-very-s", "\n"]

    out = list(logs.masked_parts(parts, [SECRET]))

    assert "".join(out) == "step 1 ****** and hf-very-secret\nhf-very-s\n"
    assert SECRET not in "".join(out)


def test_the_admins_download_ends_a_line_once_where_the_line_bound_cuts_its_crlf_in_two(
    cluster, alice, reviewer, client, monkeypatch
):
    """Each line's "\r" is the last character a part may hold, its "\n" the next part: until
    review 46 the "\r" ended the line and the "\n" alone was drawn as an empty line, so the
    staff's download had a blank line after each of these lines."""
    monkeypatch.setattr(logs, "DOWNLOAD_LINE_CHARS", len(unit(0)) + 1)
    job = job_with_one_long_line(cluster, alice, end="\r\n")
    client.force_login(reviewer)

    status, digest, _longest, _peak = read_with_peak(
        client, reverse("admin:jobs_job_log_download", args=[job.pk, "master-0"])
    )

    assert status == 200
    assert digest == sha256("".join(unit(i) + "\n" for i in range(UNITS)).replace(SECRET, "******"))


COLOURED = "token=hf-very-\x1b[31msecret-token-value\x1b[0m done\r\n"


@pytest.mark.parametrize("cut", range(1, len(COLOURED)))
def test_the_admins_download_masks_a_coloured_secret_wherever_the_line_bound_cuts_its_colour_code(
    cut,
):
    """A colour code inside a secret's value, as the job wrote it (the mask applied when the
    line was written missed it): staff get the line without the code and the secret masked
    (README "Pages"), wherever the 1 MB bound cuts the line. Until review 46 a cut inside the
    code left its tail ("1m") as text, so the value was not whole and not masked."""
    parts = [COLOURED[:cut], COLOURED[cut:]]

    out = "".join(logs.downloaded_for_staff(iter(parts), secrets=[SECRET]))

    assert out == "token=****** done\n"


@pytest.mark.parametrize("cut", range(len("step 1 hf-tok"), len("step 1 hf-tok-1234-5678") + 1))
def test_a_secret_that_starts_a_longer_one_cut_after_it_leaves_none_of_the_longer_in_clear(cut):
    """Two secrets, one the start of the other, the longer written with the cut after the
    shorter: until review 46 the first part was masked alone (its "hf-tok" became ******)
    and the rest of the longer one, "-1234-5678", was given in the clear."""
    line = "step 1 hf-tok-1234-5678 done\n"
    secrets = ["hf-tok", "hf-tok-1234-5678"]

    out = "".join(logs.masked_parts([line[:cut], line[cut:]], secrets))

    assert out == logs.masked(line, secrets) == "step 1 ****** done\n"


@pytest.mark.parametrize("view", ["log tab", "admin's log view"])
def test_the_tail_of_a_progress_bar_that_never_ends_its_line_keeps_only_the_answers_end(
    cluster, alice, alice_en, reviewer, client, monkeypatch, view
):
    """The kubelet's tail of a log redrawn after "\\r" is all of it, one line: the page's poll
    held all of it (12 MB here, 200 MB in session 34's case) and split every redraw into a line
    of its own, all of them shown. Now the answer's last MAX_TAIL_BYTES are kept, from the
    first redraw that starts in them, and of those the view's count of lines is shown."""
    monkeypatch.setattr(kubernetes_backend, "MAX_TAIL_BYTES", 1024 * 1024)
    job = job_with_one_long_line(cluster, alice, end="\r")
    if view == "log tab":
        reader, url = alice_en, reverse("job-logs", args=[job.public_id])
        headers, tail = {"HX-Request": "true", "HX-Target": "log-tail"}, views.LOG_TAIL_LINES
    else:
        client.force_login(reviewer)
        reader, url = client, reverse("admin:jobs_job_logs", args=[job.pk])
        headers, tail = {}, admin.LOG_TAIL_LINES

    tracemalloc.start()
    try:
        tracemalloc.reset_peak()
        answer = reader.get(url, {"replica": "master-0"}, headers=headers)
        _current, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()

    assert answer.status_code == 200
    page = answer.content.decode()
    assert f"{UNITS - 1:09d} " in page  # the newest redraw
    assert f"{UNITS - tail:09d} " in page
    assert f"{UNITS - tail - 1:09d} " not in page  # the tail's count of redraws, no more
    assert "000000000 " not in page
    assert SECRET not in page and "******" in page
    assert len(cluster.calls("log pods")) == 1
    assert peak < MEMORY_BOUND, f"peak {peak / 2**20:.1f} MiB"


def test_a_colour_code_a_cut_falls_inside_goes_whole_in_the_staffs_download_and_the_secret_too(
    alice, reviewer, client, small_line_bound
):
    """A secret with a colour code inside it, the cut falling inside that code: the staff's
    download strips each part's codes, then masks across the cut (masked_parts). Until left39
    the cut code's start went with the first part, its "1m" stayed in the second, and the
    secret's two halves joined around it unmasked; a code cut just before a secret left its
    "2m" in the line."""
    spec = make_spec("python train.py", envs=[S.Env("HF_TOKEN", SECRET, secret=True)])
    job = submit(alice, spec)
    JobReplica.objects.create(job=job, role="master", index=0)
    inside = "a" * (LINE_CHARS - len("hf-very-sec\x1b[3")) + "hf-very-sec\x1b[31mret-token-value"
    before = "b" * (LINE_CHARS - len("\x1b[3")) + f"\x1b[32m{SECRET}\x1b[0m tail"
    assert inside.index("1mret") == LINE_CHARS and before.index("2mhf") == LINE_CHARS
    log = replica_log_path(job.public_id, "master-0")
    log.parent.mkdir(parents=True, exist_ok=True)
    log.write_text(f"{inside}\x1b[0m done\n{before}\n")
    client.force_login(reviewer)

    answer = client.get(reverse("admin:jobs_job_log_download", args=[job.pk, "master-0"]))

    assert answer.status_code == 200
    downloaded = b"".join(answer.streaming_content).decode()
    assert downloaded == (
        "a" * (LINE_CHARS - len("hf-very-sec\x1b[3"))
        + "****** done\n"
        + "b" * (LINE_CHARS - len("\x1b[3"))
        + "****** tail\n"
    )


def test_an_escape_sequence_is_held_whole_for_the_next_part_only_when_a_cut_falls_inside_it():
    parts = ["red \x1b[3", "1mtext\x1b[0m and \x1b", "(B more \x1b]8;;http://x", "\x1b\\link\n"]

    out = list(logs.whole_sequences(parts))

    assert out == [
        "red ",
        "\x1b[31mtext\x1b[0m and ",
        "\x1b(B more ",
        "\x1b]8;;http://x\x1b\\link\n",
    ]
    assert "".join(out) == "".join(parts)
    # A part that ends its line, or a whole code, keeps what it has.
    assert list(logs.whole_sequences(["a \x1b[3\n", "b \x1b[0m", "c\n"])) == [
        "a \x1b[3\n",
        "b \x1b[0m",
        "c\n",
    ]


@pytest.mark.parametrize("part_chars", [LINE_CHARS, 3, 5])
def test_a_secret_written_over_and_over_end_to_end_keeps_each_masked_part_bounded(part_chars):
    """A secret whose copies overlap one another ("aaaa" in a line of "a", a progress bar's
    "####"): each copy across the cut moved the cut back to the start of the one before, so
    until review 47 the whole line was held back and given as one part (a line of hundreds of
    MB read whole into memory, and looked through again for each part). The parts stay about
    the line bound's size, and the secret is never given whole, even where the parts are
    shorter than it (the bound's last part of a line; the unmasked ends of parts in a row
    joined into the secret when the cut's walk back was first bounded)."""
    secret = "a" * 8
    parts = ["a" * part_chars] * 200 + ["b\n"]

    out = list(logs.masked_parts(parts, [secret]))

    assert max(len(part) for part in out) <= part_chars + 3 * len(secret)
    assert secret not in "".join(out)


@pytest.mark.parametrize("secrets", [[], [SECRET]])
def test_an_empty_line_after_a_crlf_the_line_bound_cut_in_two_stays_in_the_admins_download(
    secrets,
):
    """The "\r" of a "\r\n" the last character of a part, its "\n" the next part, an empty line
    after it: the "\n" is taken off (the line ended at its "\r"), and until review 47 the empty
    line's own "\n" went with it, so staff got the log without that line."""
    parts = ["x" * 10 + "\r", "\n", "\n", "after\n"]

    out = "".join(logs.downloaded_for_staff(iter(parts), secrets=secrets))

    assert out == "x" * 10 + "\n\nafter\n"
