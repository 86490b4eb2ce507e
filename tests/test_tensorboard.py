"""A local job's training curves on its page, read from event files that tensorboardX (an
independent writer, with its own CRC32C and protobuf serialisation) wrote."""

from __future__ import annotations

import fcntl
import json
import os
import re
import shutil
import struct
import time
import tracemalloc
from pathlib import Path

import numpy as np
import pytest
from django.urls import reverse
from django.utils import translation
from tensorboardX import SummaryWriter
from tensorboardX.event_file_writer import EventsWriter
from tensorboardX.proto.event_pb2 import Event
from tensorboardX.proto.summary_pb2 import Summary, SummaryMetadata
from tensorboardX.proto.tensor_pb2 import TensorProto
from tensorboardX.summary import scalar

from jobs import spec as S
from jobs import tensorboard as tb
from jobs.logs import job_dir
from jobs.models import Job, JobStatus
from jobs.worker import Worker

from .runner_helpers import (  # noqa: F401
    UNTIL_THE_GATE_OPENS,
    make_spec,
    open_gate,
    run_until,
    runner_settings,
    status_of,
    submit,
    volume,
)

pytestmark = pytest.mark.usefixtures("runner_settings", "in_english")


@pytest.fixture
def in_english():
    """The notes and text alternatives read directly are in English; pages stay in the
    console's language (Chinese), as their clients ask."""
    with translation.override("en"):
        yield


TB_ON = S.TensorboardConfig(enable=True, log_path="/workspace/tb")


def tb_job(owner, **changes) -> Job:
    return submit(owner, make_spec("true", **{"tensorboard": TB_ON, **changes}))


def write_scalars(folder: Path, tag: str, values: list[float], *, start: int = 0) -> None:
    writer = SummaryWriter(str(folder))
    for step, value in enumerate(values, start=start):
        writer.add_scalar(tag, value, step)
    writer.close()


def synchronous_writer(folder: Path) -> EventsWriter:
    """tensorboardX's own event file writer, without SummaryWriter's queue: what is written
    is in the file once flushed."""
    folder.mkdir(parents=True, exist_ok=True)
    return EventsWriter(str(folder / "events"))


def scalar_event(tag: str, value: float, step: int) -> Event:
    return Event(wall_time=time.time(), step=step, summary=scalar(tag, value))


def tensor_value(tag: str, tensor: TensorProto, *, plugin: str = "") -> Summary:
    value = Summary.Value(tag=tag, tensor=tensor)
    if plugin:
        value.metadata.CopyFrom(
            SummaryMetadata(plugin_data=SummaryMetadata.PluginData(plugin_name=plugin))
        )
    return Summary(value=[value])


def event_files(folder: Path) -> list[Path]:
    return sorted(folder.rglob("*tfevents*"))


def records(data: bytes) -> list[tuple[int, int]]:
    """Each TFRecord's data (start, end) in a file's bytes, read by the framing alone."""
    found, at = [], 0
    while at < len(data):
        (length,) = struct.unpack_from("<Q", data, at)
        found.append((at + 12, at + 12 + length))
        at += 12 + length + 4
    return found


def series_of(metrics) -> dict[str, list]:
    return {f"{c.run}/{c.tag}": c for c in metrics.charts}


def read(job: Job, *, seconds: float = 5) -> tb.TrainingMetrics:
    metrics = tb.training_metrics(job=Job.objects.get(pk=job.pk), seconds=seconds)
    assert metrics is not None
    return metrics


def test_scalars_written_as_simple_values_show_with_their_latest_value_and_step(alice, settings):
    job = tb_job(alice)
    write_scalars(volume(settings) / "tb", "loss", [2.5, 1.25, 0.5])

    metrics = read(job)

    assert metrics.note == "" and metrics.damaged == 0 and metrics.pending == 0
    [loss] = metrics.charts
    assert (loss.run, loss.tag, loss.latest, loss.latest_step) == (".", "loss", "0.5", 2)
    assert (loss.low, loss.high, loss.first_step, loss.last_step) == ("0.5", "2.5", 0, 2)
    # Drawn left to right from step 0 to 2, the highest value at the top.
    assert loss.points == "0.0,2.0 150.0,62.0 300.0,98.0"
    assert "lowest 0.5, highest 2.5, latest 0.5 at step 2" in loss.text


def test_scalars_written_as_tensors_the_tf2_way_show_and_other_plugins_tensors_do_not(
    alice, settings
):
    job = tb_job(alice)
    writer = SummaryWriter(str(volume(settings) / "tb"))
    for step in range(3):
        # As TF2 writes them: the plugin named with the tag's first value only.
        floats = TensorProto(dtype="DT_FLOAT", float_val=[step / 4])
        writer.file_writer.add_summary(
            tensor_value("acc", floats, plugin="scalars" if step == 0 else ""), step
        )
        doubles = TensorProto(dtype="DT_DOUBLE", tensor_content=struct.pack("<d", 0.1 * step))
        writer.file_writer.add_summary(tensor_value("lr", doubles), step)
        half = np.array([step + 0.5], dtype=np.float16).view(np.uint16)
        halves = TensorProto(dtype="DT_HALF", half_val=[int(half[0])])
        writer.file_writer.add_summary(tensor_value("grad_norm", halves), step)
        # A one-element float tensor of another plugin is not a scalar, nor is a histogram.
        other = TensorProto(dtype="DT_FLOAT", float_val=[9.0])
        writer.file_writer.add_summary(
            tensor_value("hparams", other, plugin="hparams" if step == 0 else ""), step
        )
        writer.add_histogram("weights", np.arange(10.0) * step, step)
    writer.close()

    shown = series_of(read(job))

    assert set(shown) == {"./acc", "./lr", "./grad_norm"}
    assert (shown["./acc"].latest, shown["./acc"].latest_step) == ("0.5", 2)
    assert shown["./lr"].latest == "0.2"
    assert (shown["./grad_norm"].low, shown["./grad_norm"].latest) == ("0.5", "2.5")


def test_each_sub_folder_is_a_run_of_its_own_read_from_all_its_files(alice, settings):
    job = tb_job(alice)
    logs = volume(settings) / "tb"
    write_scalars(logs / "train", "loss", [3.0, 2.0])
    write_scalars(logs / "train", "loss", [1.0], start=2)  # a second file: a restart
    write_scalars(logs / "eval" / "nightly", "loss", [4.0])

    metrics = read(job)

    assert metrics.runs == 2
    shown = series_of(metrics)
    assert set(shown) == {"train/loss", "eval/nightly/loss"}
    assert (shown["train/loss"].latest, shown["train/loss"].latest_step) == ("1", 2)
    assert shown["eval/nightly/loss"].latest == "4"


def test_a_queue_groups_task_reads_the_sub_folder_named_by_its_index_when_there_is_one(
    alice, settings
):
    from jobs.services import jobs_submit

    spec = make_spec(
        "true",
        tensorboard=TB_ON,
        submission=S.Submission(S.SUBMIT_QUEUE, total=3, concurrency=3),
    )
    tasks = jobs_submit(owner=alice, spec=spec, submit_key="sweep")
    logs = volume(settings) / "tb"
    # Tasks running side by side, each writing under its AIHC_GROUP_TASK_INDEX.
    write_scalars(logs / "0", "loss", [1.0, 0.5])
    write_scalars(logs / "1", "loss", [2.0, 0.25])

    first, second, third = (read(task) for task in tasks)

    assert {c.run: c.latest for c in first.charts} == {".": "0.5"}
    assert {c.run: c.latest for c in second.charts} == {".": "0.25"}
    assert second.log_path == "/workspace/tb/1"
    # The third wrote nothing of its own: the whole path, every sub-folder a run.
    assert {c.run: c.latest for c in third.charts} == {"0": "0.5", "1": "0.25"}


def test_an_index_the_job_sets_as_a_secret_is_read_but_never_shown_on_its_page(
    alice, alice_client, settings
):
    job = tb_job(alice, envs=[S.Env("AIHC_GROUP_TASK_INDEX", "s3cr3t-run", secret=True)])
    write_scalars(volume(settings) / "tb" / "s3cr3t-run", "loss", [1.0, 0.5])
    write_scalars(volume(settings) / "tb" / "other", "loss", [9.0])

    r = alice_client.get(reverse("job-detail", args=[job.public_id]))

    assert r.status_code == 200
    assert {c.run: c.latest for c in read(job).charts} == {".": "0.5"}
    assert read(job).log_path == "/workspace/tb/******"
    assert "<code>/workspace/tb/******</code>" in r.content.decode()
    assert "s3cr3t-run" not in r.content.decode()


def test_a_record_cut_short_is_read_once_it_is_whole_and_a_damaged_one_is_skipped(alice, settings):
    job = tb_job(alice)
    (job_dir(job.public_id)).mkdir(parents=True)
    logs = volume(settings) / "tb"
    write_scalars(logs, "loss", [5.0, 4.0, 3.0, 2.0])
    [path] = event_files(logs)
    data = bytearray(path.read_bytes())
    spans = records(bytes(data))
    # The third value's data damaged (its checksum no longer matches), the last one cut
    # short as if the writer were still writing it.
    start, end = spans[3]
    data[end - 1] ^= 0xFF
    path.write_bytes(bytes(data[:-7]))

    metrics = read(job)

    [loss] = metrics.charts
    assert (loss.latest, loss.latest_step) == ("4", 1)
    assert metrics.damaged == 1 and metrics.pending == 0
    with open(path, "ab") as file:
        file.write(bytes(data[-7:]))
    [loss] = read(job).charts
    assert (loss.latest, loss.latest_step) == ("2", 3)
    assert "3 values" in loss.text  # the damaged one stays out


def test_only_what_was_added_since_the_last_read_is_read(alice, settings):
    job = tb_job(alice)
    job_dir(job.public_id).mkdir(parents=True)
    logs = volume(settings) / "tb"
    writer = synchronous_writer(logs)
    writer.write_event(scalar_event("loss", 1.0, 0))
    writer.flush()
    assert read(job).charts[0].latest == "1"
    [path] = event_files(logs)
    # Damage what was read already: a reader starting over would now skip that record.
    data = bytearray(path.read_bytes())
    start, end = records(bytes(data))[1]
    data[end - 1] ^= 0xFF
    with open(path, "r+b") as file:
        file.write(bytes(data))
    writer.write_event(scalar_event("loss", 0.5, 1))
    writer.close()

    metrics = read(job)

    assert metrics.damaged == 0
    assert metrics.charts[0].latest == "0.5" and "2 values" in metrics.charts[0].text
    state = json.loads((job_dir(job.public_id) / tb.STATE_FILE).read_text())
    assert state["runs"]["."]["files"][path.name]["offset"] == path.stat().st_size


def test_a_request_reads_for_a_bounded_time_and_the_next_ones_catch_up(alice, settings):
    job = tb_job(alice)
    job_dir(job.public_id).mkdir(parents=True)
    write_scalars(volume(settings) / "tb", "loss", [float(n) for n in range(100)])

    first = read(job, seconds=0)

    assert first.charts == [] and first.pending > 0
    caught_up = read(job)
    assert caught_up.pending == 0 and caught_up.charts[0].latest == "99"


def test_a_long_series_keeps_a_bounded_chart_with_its_extremes_and_exact_figures(alice, settings):
    job = tb_job(alice)
    values = [1.0] * 5000
    values[2345] = 50.0  # one spike
    values[3001] = -7.0
    values[-1] = 2.0
    write_scalars(volume(settings) / "tb", "loss", values)

    [loss] = read(job).charts

    drawn = [point.split(",") for point in loss.points.split()]
    assert len(drawn) <= tb.MAX_POINTS
    assert (loss.low, loss.high, loss.latest, loss.latest_step) == ("-7", "50", "2", 4999)
    ys = [float(y) for _, y in drawn]
    assert min(ys) == 2.0 and max(ys) == 98.0  # the spike at the top, the dip at the bottom
    assert "5000 values, steps 0 to 4999" in loss.text


def test_a_nan_loss_reads_as_nan_and_breaks_nothing(alice, alice_client, settings):
    job = tb_job(alice)
    write_scalars(volume(settings) / "tb", "loss", [1.0, float("nan")])

    page = alice_client.get(reverse("job-detail", args=[job.public_id])).content.decode()

    assert "NaN（步数 1）" in page


@pytest.mark.parametrize(
    ("scale", "line"), [("", "0.0,2.0 300.0,98.0"), ("?scale=log", "0.0,2.0 300.0,30.9")]
)
def test_nan_and_infinite_values_are_not_drawn_and_the_chart_says_how_many_in_both_languages(
    alice, alice_client, settings, scale, line
):
    job = tb_job(alice)
    # Real event files, as tensorboardX writes them: a loss that diverges, then comes back.
    writer = SummaryWriter(str(volume(settings) / "tb"))
    for step, loss in enumerate([1.0, float("nan"), float("inf"), float("-inf"), 0.5]):
        writer.add_scalar("loss", loss, step)
        writer.add_scalar("lr", 0.1, step)
    writer.close()
    url = reverse("job-detail", args=[job.public_id]) + scale

    zh = alice_client.get(url).content.decode()
    alice_client.cookies["django_language"] = "en"
    en = alice_client.get(url).content.decode()

    said = re.findall(r'class="small text-muted mb-0 metric-nonfinite">([^<]+)</p>', en)
    assert said == [
        "3 of its 5 values are NaN or infinite and are not drawn: no scale has a place for them."
    ]  # the lr chart, all finite, says nothing
    assert re.findall(r'class="small text-muted mb-0 metric-nonfinite">([^<]+)</p>', zh) == [
        "5 个值里有 3 个为 NaN 或无穷大，任何刻度都无法绘制，未画出。"
    ]
    # Said under the loss chart; its two finite values are its line, from step 0 to step 4.
    loss, lr = re.findall(r'<figure class="col-md-6 col-xl-4 mb-0 metric">(.*?)</figure>', en, re.S)
    assert "metric-nonfinite" in loss and "metric-nonfinite" not in lr
    assert re.search(r'<polyline points="([^"]+)"', loss).group(1) == line


def test_nan_values_are_counted_exactly_after_a_long_tag_is_compacted(alice, settings):
    job = tb_job(alice)
    # Past MAX_POINTS the points kept are the finite extremes: the count is of all read.
    values = [float("nan") if step % 3 == 0 else float(step) for step in range(1200)]
    write_scalars(volume(settings) / "tb", "loss", values)

    [loss] = read(job).charts

    assert (loss.nonfinite, loss.value_count) == (400, 1200)


def test_a_state_saved_before_nan_was_counted_is_read_again(alice, settings):
    job = tb_job(alice)
    job_dir(job.public_id).mkdir(parents=True)
    write_scalars(volume(settings) / "tb", "loss", [1.0, float("nan")])
    read(job)
    state_file = job_dir(job.public_id) / tb.STATE_FILE
    state = json.loads(state_file.read_text())
    state["version"] = 1
    del state["runs"]["."]["tags"]["loss"]["nonfinite"]
    state_file.write_text(json.dumps(state))

    [loss] = read(job).charts

    assert loss.nonfinite == 1


def test_values_too_far_apart_for_their_span_to_be_a_float_are_still_drawn(alice, settings):
    job = tb_job(alice)
    writer = synchronous_writer(volume(settings) / "tb")
    for step, value in enumerate([-1e308, 1e308, 0.0]):
        doubles = TensorProto(dtype="DT_DOUBLE", double_val=[value])
        writer.write_event(Event(step=step, summary=tensor_value("far", doubles, plugin="scalars")))
    writer.close()

    [far] = read(job).charts

    assert far.points == "0.0,98.0 150.0,2.0 300.0,50.0"


def test_a_run_folder_named_in_bytes_that_are_no_utf8_shows_them_as_replacement_characters(
    alice, alice_client, settings
):
    job = tb_job(alice)
    logs = volume(settings) / "tb"
    write_scalars(Path(os.fsdecode(os.fsencode(logs / "run") + b"\xff")), "loss", [1.0])
    write_scalars(logs / "eval", "loss", [2.0])

    page = alice_client.get(reverse("job-detail", args=[job.public_id]))

    assert page.status_code == 200
    assert (
        '<span class="font-monospace metric-tag">run\ufffd / loss</span>' in page.content.decode()
    )


def test_a_tag_of_megabytes_is_kept_and_shown_as_its_first_characters(
    alice, alice_client, settings
):
    job = tb_job(alice)
    job_dir(job.public_id).mkdir(parents=True)
    writer = synchronous_writer(volume(settings) / "tb")
    writer.write_event(scalar_event("x" * 5_000_000, 1.0, 0))
    writer.close()

    page = alice_client.get(reverse("job-detail", args=[job.public_id])).content.decode()

    shown = "x" * tb.MAX_TAG_CHARS + "…"
    assert f'<span class="font-monospace metric-tag">{shown}</span>' in page
    assert len(page) < 100_000
    assert (job_dir(job.public_id) / tb.STATE_FILE).stat().st_size < 10_000


def test_a_tensor_of_millions_of_values_is_no_scalar_and_is_not_decoded_value_by_value(
    alice, settings
):
    job = tb_job(alice)
    writer = synchronous_writer(volume(settings) / "tb")
    floats = TensorProto(dtype="DT_FLOAT", float_val=[1.0] * 2_000_000)  # 8 MB
    writer.write_event(Event(step=0, summary=tensor_value("big", floats)))
    writer.close()

    tracemalloc.start()
    try:
        metrics = read(job)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()

    assert metrics.charts == []
    # The record itself, read once and cut from its checksum; 2 million floats in a list
    # were 64 MB more.
    assert peak < 30_000_000


def test_an_event_of_a_hundred_thousand_values_is_read_for_its_first_ones_only(alice, settings):
    job = tb_job(alice)
    writer = synchronous_writer(volume(settings) / "tb")
    values = [Summary.Value(tag="loss", simple_value=1.0)] * 100_000  # 1 MB, one record
    writer.write_event(Event(step=0, summary=Summary(value=values)))
    writer.close()

    [loss] = read(job).charts

    # Not 100,000 points added one by one (seconds of a web request; a record may be 256 MB).
    assert f"{tb.MAX_EVENT_VALUES} values" in loss.text


def test_tags_beyond_the_limit_are_counted_not_shown(alice, settings):
    job = tb_job(alice)
    writer = SummaryWriter(str(volume(settings) / "tb"))
    for n in range(tb.MAX_TAGS + 3):
        writer.add_scalar(f"tag{n:03}", float(n), 0)
    writer.close()

    metrics = read(job)

    assert len(metrics.charts) == tb.MAX_TAGS and metrics.more_tags == 3


def test_a_log_path_outside_the_job_s_mounts_says_so_instead_of_an_empty_chart(alice):
    job = tb_job(alice, tensorboard=S.TensorboardConfig(enable=True, log_path="/tmp/tb"))

    metrics = read(job)

    assert metrics.charts == []
    assert "/tmp/tb is not on a volume this job mounts" in metrics.note


def test_an_ended_job_with_no_event_files_under_its_log_path_says_so_and_where_to_write_them(
    alice, alice_client, settings
):
    job = tb_job(alice)  # its log path is /workspace/tb; its code writes to /workspace/runs
    write_scalars(volume(settings) / "runs", "loss", [0.5])

    assert read(job).note == ""  # not started yet: its curves may still come
    run_until(Worker(), lambda: status_of(job) == JobStatus.SUCCEEDED)
    metrics = read(job)

    assert metrics.charts == []
    assert metrics.note == (
        "This job has ended and there are no event files (events.out.tfevents.*) under "
        "/workspace/tb, so it has no curves. Its code is given this path in the "
        "AIHC_TENSORBOARD_LOG_PATH variable: write them there, e.g. "
        'SummaryWriter(os.environ["AIHC_TENSORBOARD_LOG_PATH"]).'
    )
    page = alice_client.get(reverse("job-detail", args=[job.public_id])).content.decode()
    assert "任务已结束，而 /workspace/tb 下没有事件文件" in page
    assert 'id="metrics-empty"' not in page  # no "No scalars yet" promising curves to come
    # Files put there since (copied from where the code wrote them) are read as ever.
    [written] = event_files(volume(settings) / "runs")
    (volume(settings) / "tb").mkdir()
    shutil.copy(written, volume(settings) / "tb" / written.name)
    assert read(job).note == "" and list(series_of(read(job))) == ["./loss"]


def test_symbolic_links_never_lead_the_console_outside_the_mounted_folder(
    alice, settings, tmp_path
):
    outside = tmp_path / "outside"
    write_scalars(outside / "run", "secret", [42.0])
    logs = volume(settings) / "tb"
    logs.mkdir()
    # An event file, a run folder and the log folder itself, each a link to the outside.
    [secret_file] = event_files(outside)
    (logs / "events.out.tfevents.1.link").symlink_to(secret_file)
    (logs / "linked-run").symlink_to(outside / "run")
    (volume(settings) / "tb-link").symlink_to(outside)
    # A FIFO named like an event file must not hang the request either.
    os.mkfifo(logs / "events.out.tfevents.2.fifo")
    write_scalars(logs / "real", "loss", [1.0])

    shown = series_of(read(tb_job(alice)))
    linked = read(
        tb_job(alice, tensorboard=S.TensorboardConfig(enable=True, log_path="/workspace/tb-link"))
    )

    assert set(shown) == {"real/loss"}
    assert linked.charts == [] and "leads outside the folder the job mounts" in linked.note


def test_a_job_on_a_remote_backend_gets_a_plain_note(alice):
    job = tb_job(alice)
    Job.objects.filter(pk=job.pk).update(backend="aihc")

    metrics = read(job)

    assert metrics.charts == [] and "on the storage of AIHC" in metrics.note


def test_the_job_page_shows_the_section_and_the_status_poll_refreshes_it(
    alice, alice_client, settings
):
    job = tb_job(alice)
    logs = volume(settings) / "tb"
    write_scalars(logs, "loss", [0.75])
    page = alice_client.get(reverse("job-detail", args=[job.public_id])).content.decode()

    assert 'id="metrics-heading">训练指标</h2>' in page
    assert '<span class="font-monospace metric-tag">loss</span>' in page
    assert "0.75" in page and '<svg class="metric-chart' in page
    write_scalars(logs, "loss", [0.25], start=1)
    live = alice_client.get(
        reverse("job-live", args=[job.public_id]), headers={"HX-Request": "true"}
    )
    html = live.content.decode()
    assert (
        '<section class="mt-3" id="metrics" aria-labelledby="metrics-heading" hx-swap-oob="true"'
        in html
    )
    assert "<html" not in html and "0.25" in html


def test_a_log_scale_draws_a_learning_rate_by_its_powers_of_ten(alice, settings):
    job = tb_job(alice)
    write_scalars(volume(settings) / "tb", "lr", [0.1, 0.01, 0.001, 0.0001])

    [linear] = read(job).charts
    [lr] = tb.training_metrics(job=Job.objects.get(pk=job.pk), log=True).charts

    # On a linear axis the last three sit together at the bottom; on a log one, a decade apart.
    assert linear.points == "0.0,2.0 100.0,88.5 200.0,97.1 300.0,98.0"
    assert lr.points == "0.0,2.0 100.0,34.0 200.0,66.0 300.0,98.0"
    assert [(t.label, t.y) for t in lr.ticks] == [
        ("0.0001", "98.0"),
        ("0.001", "66.0"),
        ("0.01", "34.0"),
        ("0.1", "2.0"),
    ]
    assert linear.ticks == [] and lr.left_out == 0
    assert lr.text == linear.text  # its words unchanged by the scale


def test_a_log_scale_leaves_out_values_at_or_below_0_and_counts_them(alice, settings):
    job = tb_job(alice)
    write_scalars(volume(settings) / "tb", "reward", [-2.0, 0.0, 10.0, 1000.0, float("nan")])

    [reward] = tb.training_metrics(job=Job.objects.get(pk=job.pk), log=True).charts

    # Two of its four finite points cannot be drawn: left out, not put at the axis's foot.
    assert (reward.left_out, reward.point_count) == (2, 4)
    assert reward.points == "200.0,98.0 300.0,2.0"
    assert [t.label for t in reward.ticks] == ["10", "100", "1000"]
    assert "lowest -2, highest 1000" in reward.text


def test_a_log_axis_over_many_decades_labels_some_and_a_value_past_any_float_reads(alice, settings):
    job = tb_job(alice)
    writer = synchronous_writer(volume(settings) / "tb")
    for step, value in enumerate([1e-300, 1e300, 5e-324]):
        doubles = TensorProto(dtype="DT_DOUBLE", double_val=[value])
        writer.write_event(Event(step=step, summary=tensor_value("far", doubles, plugin="scalars")))
    writer.close()

    [far] = tb.training_metrics(job=Job.objects.get(pk=job.pk), log=True).charts

    labels = [t.label for t in far.ticks]
    assert len(labels) <= tb.MAX_TICKS and labels[0] == "1e-324" and labels[-1].startswith("1e+")
    # 5e-324, the least double, within the axis's lowest decade (1e-324 is no double).
    assert far.points.split()[2] == "300.0,97.9"


def test_the_log_scale_is_a_link_that_keeps_the_pages_address_and_survives_its_refresh(
    alice, alice_client, settings
):
    job = tb_job(alice)
    write_scalars(volume(settings) / "tb", "loss", [10.0, 0.0, 0.1])
    page_url = reverse("job-detail", args=[job.public_id])

    page = alice_client.get(f"{page_url}?replica=master-0").content.decode()

    switch = re.search(r'<p class="small mb-2 metric-scale" id="metrics-scale">(.*?)</p>', page)
    assert f'href="{page_url}?replica=master-0&amp;scale=log#metrics"' in switch.group(1)
    assert '<strong aria-current="true">线性</strong>' in switch.group(1)
    assert 'class="metric-left-out"' not in page

    log_page = alice_client.get(f"{page_url}?replica=master-0&scale=log").content.decode()

    assert f'hx-get="{reverse("job-live", args=[job.public_id])}?scale=log"' in log_page
    assert (
        '<text x="100%" y="98.0%" text-anchor="end" dominant-baseline="middle">0.1</text>'
        in log_page
    )
    assert "图中 3 个点里有 1 个小于或等于 0" in log_page
    # The status poll, as htmx sends it from that page: the same scale, and a switch back to
    # linear that keeps the page's replica.
    live = alice_client.get(
        f"{reverse('job-live', args=[job.public_id])}?scale=log",
        headers={
            "HX-Request": "true",
            "HX-Current-URL": f"http://testserver{page_url}?replica=master-0&scale=log",
        },
    ).content.decode()
    assert '<strong aria-current="true">对数</strong>' in live
    assert f'href="{page_url}?replica=master-0#metrics"' in live
    assert "dominant-baseline" in live and "图中 3 个点里有 1 个小于或等于 0" in live


def test_the_log_scale_is_kept_by_the_pages_log_tabs_and_search(alice, alice_client, settings):
    job = tb_job(alice)
    write_scalars(volume(settings) / "tb", "loss", [1.0, 0.1])
    run_until(Worker(), lambda: status_of(job) == JobStatus.SUCCEEDED)
    page_url = reverse("job-detail", args=[job.public_id])
    htmx = {"HX-Request": "true"}

    page = alice_client.get(f"{page_url}?scale=log").content.decode()
    tab = alice_client.get(
        reverse("job-logs", args=[job.public_id]),
        {"replica": "master-0", "scale": "log"},
        headers=htmx,
    )
    found = alice_client.get(
        reverse("job-log-search", args=[job.public_id]),
        {"replica": "master-0", "q": "x", "scale": "log"},
        headers=htmx,
    )

    # A replica's tab, on the page and in the panel a click brings, opens the page on the log
    # scale still; so does a search (its form and the address it puts in the bar).
    assert f'href="{page_url}?replica=master-0&amp;scale=log#logs"' in page
    assert '<input type="hidden" name="scale" value="log">' in page
    assert f'href="{page_url}?replica=master-0&amp;scale=log#logs"' in tab.content.decode()
    assert "scale=log" in found["HX-Push-Url"]
    assert '<input type="hidden" name="scale" value="log">' in found.content.decode()


def test_the_job_page_has_no_section_without_tensorboard(alice, alice_client):
    job = submit(alice, make_spec("true"))

    page = alice_client.get(reverse("job-detail", args=[job.public_id])).content.decode()

    assert 'id="metrics"' not in page


def test_an_ended_job_still_being_read_polls_its_section_until_it_is_read(
    alice, alice_client, settings, monkeypatch
):
    job = tb_job(alice)
    job_dir(job.public_id).mkdir(parents=True)
    Job.objects.filter(pk=job.pk).update(status=JobStatus.SUCCEEDED)
    write_scalars(volume(settings) / "tb", "loss", [1.0, 0.5])
    with monkeypatch.context() as patched:
        patched.setattr(tb, "READ_SECONDS", 0)  # a page that ran out of time reading
        page = alice_client.get(reverse("job-detail", args=[job.public_id])).content.decode()
    assert 'id="metrics-pending"' in page
    assert f'hx-get="{reverse("job-metrics", args=[job.public_id])}"' in page

    url = reverse("job-metrics", args=[job.public_id])
    answer = alice_client.get(url, headers={"HX-Request": "true"})

    assert answer.status_code == 286  # all read: the section stops polling
    assert "0.5（步数 1）" in answer.content.decode()
    plain = alice_client.get(url)
    assert plain.status_code == 302 and plain["Location"].endswith("#metrics")


def test_two_requests_at_once_read_the_files_once(alice, settings):
    job = tb_job(alice)
    job_dir(job.public_id).mkdir(parents=True)
    write_scalars(volume(settings) / "tb", "loss", [float(n) for n in range(50)])
    lock = os.open(job_dir(job.public_id) / tb.LOCK_FILE, os.O_RDWR | os.O_CREAT)
    fcntl.flock(lock, fcntl.LOCK_EX)
    try:
        # Another request holds the lock: this one answers with the state as it is.
        waiting = read(job)
        assert waiting.charts == []
    finally:
        os.close(lock)
    assert read(job).charts[0].latest == "49"


def test_a_log_folder_of_a_hundred_thousand_files_is_listed_in_part_on_each_poll(alice, settings):
    """Medium (security round 16): each status poll listed every folder under the log path
    whole, and sorted it, in the web process: a job that wrote millions of files there cost
    every poll of its page seconds and hundreds of MB. One walk lists MAX_ENTRIES at most."""
    job = tb_job(alice)
    folder = volume(settings) / "tb"
    folder.mkdir()
    for n in range(100_000):
        os.close(os.open(folder / f"not-an-event-file-{n:06}", os.O_CREAT | os.O_WRONLY))

    tracemalloc.start()
    try:
        metrics = read(job)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()

    assert metrics.charts == []
    # 100,000 entries listed and sorted took 16 MB (a million, 160 MB).
    assert peak < 6_000_000


def test_a_copy_given_the_same_log_path_draws_its_own_curve_and_the_source_keeps_its_own(
    alice, settings
):
    # Copy & edit (and Run again) keep the Tensorboard log path: the two jobs' writers put
    # their files side by side in one folder, each named with the time it was created.
    logs = volume(settings) / "tb"
    worker = Worker()
    source = submit(alice, make_spec(UNTIL_THE_GATE_OPENS, tensorboard=TB_ON))
    run_until(worker, lambda: status_of(source) == JobStatus.RUNNING)
    write_scalars(logs, "loss", [1.0, 0.9])
    open_gate(settings)
    run_until(worker, lambda: status_of(source) == JobStatus.SUCCEEDED)
    # A file's name holds whole seconds: the copy is submitted a few seconds later, as a
    # person going through the wizard would be.
    ended = source.finished_at.timestamp()
    while time.time() < int(ended) + tb.PRELOADED_SECONDS + 1:
        time.sleep(0.05)
    (volume(settings) / "gate-open").unlink()
    copy = submit(alice, make_spec(UNTIL_THE_GATE_OPENS, tensorboard=TB_ON))
    run_until(worker, lambda: status_of(copy) == JobStatus.RUNNING)
    write_scalars(logs, "loss", [0.5, 0.1])
    open_gate(settings)
    run_until(worker, lambda: status_of(copy) == JobStatus.SUCCEEDED)

    [of_source] = read(source).charts
    [of_copy] = read(copy).charts

    assert len(event_files(logs)) == 2
    assert (of_source.latest, of_source.low, of_source.high) == ("0.9", "0.9", "1")
    assert (of_copy.latest, of_copy.low, of_copy.high) == ("0.1", "0.1", "0.5")


def test_a_queue_task_that_waited_for_the_one_before_it_draws_only_its_own_files(alice, settings):
    from jobs.services import jobs_submit

    # One at a time: the second task is created with the first, and starts once it ended.
    spec = make_spec(
        UNTIL_THE_GATE_OPENS,
        tensorboard=TB_ON,
        submission=S.Submission(S.SUBMIT_QUEUE, total=2, concurrency=1),
    )
    first, second = jobs_submit(owner=alice, spec=spec, submit_key="one-at-a-time")
    logs = volume(settings) / "tb"
    worker = Worker()
    run_until(worker, lambda: status_of(first) == JobStatus.RUNNING)
    write_scalars(logs, "loss", [1.0, 0.5])
    [written] = event_files(logs)
    # A file's name holds whole seconds: the first runs on a few seconds after writing it.
    while time.time() < int(written.name.split(".")[3]) + tb.PRELOADED_SECONDS + 1:
        time.sleep(0.05)
    open_gate(settings)
    # Two jobs' ends and one start, each with its Tensorboard: more than run_until's 30 s on a
    # loaded machine (a ci rehearsal at load 28).
    run_until(worker, lambda: status_of(second) == JobStatus.SUCCEEDED, timeout=120)

    assert [c.latest for c in read(first).charts] == ["0.5"]
    assert read(second).charts == []
