"""Volumes of the local pool that only some users may mount (LOCAL_VOLUMES "@group",
read-only ":ro"): offered, checked and refused the same way by the wizard, its mount row,
submit, import, Copy & edit, Run again, the v1 and v2 APIs and the runner at start
(jobs/volume_access.py)."""

from __future__ import annotations

import html
import re
from pathlib import Path

import pytest
from django.contrib.auth.models import Group
from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext
from django.urls import reverse

from jobs import spec as S
from jobs import wizard as W
from jobs.aihc.endpoints import V2
from jobs.models import Draft, Job, JobStatus
from jobs.volume_access import HostVolume, parse_volumes
from jobs.worker import Worker

from . import test_api as v1
from .runner_helpers import make_spec, run_until, runner_settings, status_of, submit  # noqa: F401
from .test_api import A800, body, refused
from .test_api_v2 import v2_body
from .test_wizard import (
    HTMX,
    complete_steps,
    data_data,
    field_errors,
    new_draft,
    post_step,
    step_url,
)
from .test_wizard_import import BODY, CHANNELS, import_body

wsgi, alice_key, api, fake = v1.wsgi, v1.alice_key, v1.api, v1.fake

NOT_OFFERED_ZH = "未向您提供"
NOT_OFFERED_EN = "is not offered to you on the local pool"


@pytest.fixture(autouse=True)
def _cards(settings):
    settings.LOCAL_ACCELERATORS = f"{A800}=8"


@pytest.fixture
def volumes(settings, tmp_path) -> dict[str, Path]:
    """An open scratch volume, team A's own, one team A and team B share, and read-only
    models; Alice is in team A, Bob in no team."""
    roots = {name: tmp_path / "vol" / name for name in ("scratch", "team-a", "shared", "models")}
    for root in roots.values():
        root.mkdir(parents=True)
    (roots["team-a"] / "checkpoints").mkdir()
    settings.LOCAL_VOLUMES = (
        f"scratch={roots['scratch']},team-a={roots['team-a']}@team-a,"
        f"shared={roots['shared']}@team-a+team-b,models={roots['models']}:ro"
    )
    return roots


@pytest.fixture
def team_a(alice, db) -> Group:
    group = Group.objects.create(name="team-a")
    alice.groups.add(group)
    return group


def offered(page: str) -> list[str]:
    select = re.search(r'<select name="mounts-0-name".*?</select>', page, re.S)
    assert select, "the data step has a volume select"
    return re.findall(r'<option value="([^"]+)"', select.group(0))


# -- the setting -------------------------------------------------------------------------


def test_the_setting_reads_groups_and_read_only_and_an_old_value_reads_as_before():
    assert parse_volumes("scratch=/data/scratch") == [HostVolume("scratch", Path("/data/scratch"))]
    assert parse_volumes(
        "models=/data/models:ro,team-a=/data/a@team-a,shared=/data/s:ro@team-a+team-b,"
        "odd=/data/user@host/x"
    ) == [
        HostVolume("models", Path("/data/models"), read_only=True),
        HostVolume("team-a", Path("/data/a"), groups=frozenset({"team-a"})),
        HostVolume(
            "shared", Path("/data/s"), read_only=True, groups=frozenset({"team-a", "team-b"})
        ),
        HostVolume("odd", Path("/data/user@host/x")),
    ]


def test_the_setting_refuses_read_only_written_after_the_groups_and_trims_a_space_before_it():
    """Low (review 16b): "/data/a@team:ro" read as a read-write volume of a group "team:ro",
    and "/data/x :ro" as the folder "/data/x " (with its space)."""
    with pytest.raises(ValueError, match=r":ro goes before the @"):
        parse_volumes("team-a=/data/a@team-a:ro")
    assert parse_volumes("x=/data/x :ro @ 算法组 + b") == [
        HostVolume("x", Path("/data/x"), read_only=True, groups=frozenset({"算法组", "b"}))
    ]


def test_a_folder_holding_an_at_sign_is_written_in_quotes_and_reads_as_written():
    """A bare folder whose last part holds an "@" reads as a group list (as before); in double
    quotes it is the folder, with :ro and the groups after the closing quote."""
    assert parse_volumes(
        'lab="/srv/u@lab",ro="/srv/v@lab":ro,kept="/srv/w@lab"@team-a+team-b,'
        'both= "/srv/x@lab:ro" :ro @ 算法组,plain="/data/plain"'
    ) == [
        HostVolume("lab", Path("/srv/u@lab")),
        HostVolume("ro", Path("/srv/v@lab"), read_only=True),
        HostVolume("kept", Path("/srv/w@lab"), groups=frozenset({"team-a", "team-b"})),
        # Between the quotes everything is the folder's name, a ":ro" too.
        HostVolume("both", Path("/srv/x@lab:ro"), read_only=True, groups=frozenset({"算法组"})),
        HostVolume("plain", Path("/data/plain")),
    ]
    # Unquoted, every value reads as before: the last "@" starts the groups, "@@" included.
    assert parse_volumes("lab=/srv/u@lab,two=/data/a@@team") == [
        HostVolume("lab", Path("/srv/u"), groups=frozenset({"lab"})),
        HostVolume("two", Path("/data/a@"), groups=frozenset({"team"})),
    ]


@pytest.mark.parametrize(
    ("value", "reason"),
    [
        ('lab="/srv/u@lab', 'closing " is missing'),
        ('lab="/srv/u@lab"x', "only :ro and then @group+group may follow"),
        ('lab="/srv/u@lab"@team-a:ro', ":ro goes before the @"),
        ('lab="/srv/u@lab"@', "an empty group name"),
        ('lab="srv/u@lab"', "(the folder is not absolute: it starts with /)"),
        ('lab=""', "(no folder after the =)"),
        # Unquoted too: the default's relative folder written out, a name twice, no name.
        ("scratch=var/volumes/scratch", "(the folder is not absolute: it starts with /)"),
        ("lab=/srv/a,lab=/srv/b", "(the name lab is listed twice)"),
        ("/srv/a", "(no name= before the folder)"),
        ("=/srv/a", "(no name= before the folder)"),
    ],
)
def test_a_wrong_folder_is_refused_with_its_reason(value, reason):
    with pytest.raises(ValueError, match=r"LOCAL_VOLUMES is name=/absolute/folder") as refused:
        parse_volumes(value)
    wrong = value.split(",")[-1]  # the item named: the second of a name listed twice
    assert repr(wrong) in str(refused.value) and reason in str(refused.value)


# -- the wizard --------------------------------------------------------------------------


def test_the_data_step_offers_a_team_member_their_teams_volumes_and_others_only_open_ones(
    volumes, team_a, alice_client, bob, superuser
):
    pages = {}
    for who, user in (("alice", None), ("bob", bob), ("root", superuser)):
        client = alice_client
        if user is not None:
            client = Client()
            client.force_login(user)
        draft = new_draft(client)
        complete_steps(client, draft, upto=W.DATA)
        pages[who] = client.get(step_url(draft, W.DATA)).content.decode()

    assert offered(pages["alice"]) == ["scratch", "team-a", "shared", "models"]
    assert offered(pages["bob"]) == ["scratch", "models"]
    assert str(volumes["team-a"]) not in pages["bob"]
    assert offered(pages["root"]) == ["scratch", "team-a", "shared", "models"]


def test_a_volume_not_offered_is_refused_on_its_field_and_the_row_is_kept(volumes, team_a, bob):
    client = Client()
    client.force_login(bob)
    draft = new_draft(client)
    complete_steps(client, draft, upto=W.DATA)

    r = post_step(
        client,
        draft,
        W.DATA,
        data_data(
            mounts=(("hostpath", "team-a", "/ckpt"),), **{"mounts-0-source_path": "checkpoints"}
        ),
    )
    unknown = post_step(client, draft, W.DATA, data_data(mounts=(("hostpath", "nosuch", "/ckpt"),)))

    assert r.status_code == 200
    messages = field_errors(r, "id_mounts-0-name")
    assert any(NOT_OFFERED_ZH in m and "team-a" in m for m in messages)
    # Nothing of the volume itself: no folder, no word on its source path.
    page = r.content.decode()
    assert str(volumes["team-a"]) not in page and "不存在" not in " ".join(messages)
    # A volume that does not exist is answered in the same words.
    assert [
        m.replace("nosuch", "team-a")
        for m in field_errors(unknown, "id_mounts-0-name")
        if NOT_OFFERED_ZH in m
    ] == [m for m in messages if NOT_OFFERED_ZH in m]
    draft.refresh_from_db()
    assert draft.data[W.DATA]["mounts-0-mount_path"] == ["/ckpt"]
    assert W.DATA not in draft.completed_steps


def test_a_read_only_volume_forces_read_only_with_the_reason(volumes, alice_client):
    draft = new_draft(alice_client)
    complete_steps(alice_client, draft, upto=W.DATA)
    row = alice_client.get(
        reverse("wizard-mount-row", args=[draft.id]),
        {
            "row": "0",
            "mounts-0-type": "hostpath",
            "mounts-0-name": "models",
            "mounts-0-access": "rw",
        },
    ).content.decode()

    sent_rw = post_step(
        alice_client, draft, W.DATA, data_data(mounts=(("hostpath", "models", "/models"),))
    )

    access = re.search(r'<select name="mounts-0-access".*?</select>', row, re.S).group(0)
    assert re.findall(r'<option value="([^"]+)"', access) == ["ro"]
    assert "对所有人只读" in row
    assert any("对所有人只读" in m for m in field_errors(sent_rw, "id_mounts-0-access"))
    again = post_step(
        alice_client,
        draft,
        W.DATA,
        data_data(mounts=(("hostpath", "models", "/models"),), **{"mounts-0-access": "ro"}),
    )
    assert again.status_code == 302
    assert W.assemble(W.wizard_state(Draft.objects.get(pk=draft.pk))).spec.datasources[0].read_only


def test_the_mount_row_offers_only_the_volumes_the_user_may_mount(
    volumes, team_a, alice_client, bob
):
    draft = new_draft(alice_client)
    client = Client()
    client.force_login(bob)
    bobs = new_draft(client)
    query = {"row": "0", "mounts-0-type": "hostpath", "mounts-0-name": "team-a"}

    alices_row = alice_client.get(reverse("wizard-mount-row", args=[draft.id]), query)
    bobs_row = client.get(reverse("wizard-mount-row", args=[bobs.id]), query)

    assert "team-a" in offered(alices_row.content.decode())
    assert offered(bobs_row.content.decode()) == ["scratch", "models"]


def test_submit_refuses_a_volume_whose_group_the_user_has_left_and_keeps_the_draft(
    volumes, team_a, alice, alice_client
):
    draft = new_draft(alice_client)
    complete_steps(
        alice_client, draft, **{W.DATA: data_data(mounts=(("hostpath", "team-a", "/ckpt"),))}
    )
    alice.groups.remove(team_a)

    r = alice_client.post(reverse("wizard-submit", args=[draft.id]), follow=True)

    assert not Job.objects.exists()
    assert r.redirect_chain[-1][0] == step_url(draft, W.REVIEW)
    assert "该步骤有错误，请打开修改。" in html.unescape(r.content.decode())
    draft.refresh_from_db()
    # Opened from the review, its 下一步 says which row and why.
    data_step = post_step(alice_client, draft, W.DATA, dict(draft.data[W.DATA]))
    assert any(NOT_OFFERED_ZH in m for m in field_errors(data_step, "id_mounts-0-name"))
    draft.refresh_from_db()
    assert draft.submitted_at is None
    assert draft.data[W.DATA]["mounts-0-name"] == ["team-a"]
    assert draft.data[W.DATA]["mounts-0-mount_path"] == ["/ckpt"]


def test_an_import_naming_a_volume_not_offered_leaves_the_data_step_to_fix(volumes, team_a, bob):
    client = Client()
    client.force_login(bob)
    imported = {**BODY, **CHANNELS}
    imported["datasources"] = [{"type": "hostpath", "name": "team-a", "mountPath": "/ckpt"}]

    import_body(client, imported)

    draft = Draft.objects.get()
    assert W.DATA not in draft.completed_steps
    page = client.get(step_url(draft, W.DATA))
    assert any(NOT_OFFERED_ZH in m for m in field_errors(page, "id_mounts-0-name"))
    assert draft.data[W.DATA]["mounts-0-name"] == ["team-a"]


def _finished_job(owner, name: str = "team-a") -> Job:
    spec = make_spec("true", datasources=[S.Datasource("hostpath", name, mount_path="/ckpt")])
    job = submit(owner, spec)
    Job.objects.filter(pk=job.pk).update(status=JobStatus.SUCCEEDED)
    return job


def test_run_again_of_a_job_whose_volume_the_owner_may_no_longer_mount_is_refused(
    volumes, team_a, alice, alice_client
):
    job = _finished_job(alice)
    alice.groups.remove(team_a)

    r = alice_client.post(reverse("job-rerun", args=[job.public_id]), follow=True)

    assert Job.objects.count() == 1
    assert NOT_OFFERED_ZH in html.unescape(r.content.decode())


def test_copy_and_edit_keeps_the_rows_and_says_which_volume_must_change(
    volumes, team_a, alice, alice_client
):
    job = _finished_job(alice)
    alice.groups.remove(team_a)

    r = alice_client.post(reverse("job-copy", args=[job.public_id]), follow=True)

    draft = Draft.objects.get()
    assert draft.data[W.DATA]["mounts-0-name"] == ["team-a"]
    assert NOT_OFFERED_ZH in html.unescape(r.content.decode())
    alice_client.post(reverse("wizard-submit", args=[draft.id]))
    assert Job.objects.count() == 1


def test_volumes_kept_for_groups_cost_each_wizard_page_one_query_of_groups(
    volumes, team_a, alice_client, settings
):
    """What restricting a volume adds to the wizard's pages (review 16b): the owner's group
    names, read once where the pool is offered (the data step, its mount row) and at the
    review, whose pool check (volume_refusals) uses the names the offered pool read. Open
    volumes add nothing."""
    draft = new_draft(alice_client)
    complete_steps(alice_client, draft)
    pages = {
        "data": (step_url(draft, W.DATA), {}),
        "mount row": (
            reverse("wizard-mount-row", args=[draft.id]) + "?row=0&mounts-0-type=hostpath",
            HTMX,
        ),
        "review": (step_url(draft, W.REVIEW), {}),
    }

    def counts() -> dict[str, tuple[int, int]]:
        found = {}
        for name, (url, headers) in pages.items():
            with CaptureQueriesContext(connection) as queries:
                assert alice_client.get(url, headers=headers).status_code == 200
            groups = [q for q in queries if q["sql"].startswith('SELECT "auth_group"."name"')]
            found[name] = (len(queries), len(groups))
        return found

    restricted = counts()
    settings.LOCAL_VOLUMES = ",".join(
        item.split("@")[0] for item in settings.LOCAL_VOLUMES.split(",")
    )
    open_ = counts()

    assert {name: groups for name, (_, groups) in open_.items()} == dict.fromkeys(pages, 0)
    assert {name: groups for name, (_, groups) in restricted.items()} == dict.fromkeys(pages, 1)
    assert {name: restricted[name][0] - open_[name][0] for name in pages} == dict.fromkeys(pages, 1)


# -- the APIs ------------------------------------------------------------------------------


def _bob_api(wsgi, bob):
    from jobs.api_keys import api_key_create

    _key, secret = api_key_create(owner=bob)
    return v1.client_for(wsgi, _key.access_key_id, secret)


@pytest.mark.usefixtures("runner_settings")
def test_the_v1_api_refuses_a_volume_not_offered_on_its_field_without_a_word_of_it(
    volumes, team_a, wsgi, bob
):
    bobs = _bob_api(wsgi, bob)
    theirs = body()
    theirs["datasources"] = [
        {"type": "hostpath", "name": "team-a", "mountPath": "/ckpt", "sourcePath": "checkpoints"}
    ]
    missing = body()
    missing["datasources"] = [
        {"type": "hostpath", "name": "team-a", "mountPath": "/ckpt", "sourcePath": "nothing-here"}
    ]

    error = refused(lambda: bobs.create_job(pool="local", body=theirs))
    other = refused(lambda: bobs.create_job(pool="local", body=missing))

    assert (error.status, error.code) == (400, "InvalidParameter")
    assert error.message.startswith("datasources[0].name: Volume “team-a” " + NOT_OFFERED_EN)
    # Whether the folder exists in it or not, the answer is the same: nothing learnt.
    assert other.message == error.message
    assert str(volumes["team-a"]) not in error.message
    assert not Job.objects.exists()


@pytest.mark.usefixtures("runner_settings")
def test_another_row_mounted_inside_a_volume_not_offered_tells_nothing_of_what_it_holds(
    volumes, team_a, wsgi, bob
):
    """Medium (review 16b): the backend still looked inside a refused row's volume for the
    other rows' checks: a scratch row mounted inside a read-only team-a row was refused only
    when the folder it mounts on did not exist in team-a, so Bob could test any name there."""
    bobs = _bob_api(wsgi, bob)

    def inside(folder: str) -> dict:
        sent = body()
        sent["datasources"] = [
            {
                "type": "hostpath",
                "name": "team-a",
                "mountPath": "/ckpt",
                "options": {"readOnly": True},
            },
            {"type": "hostpath", "name": "scratch", "mountPath": f"/ckpt/{folder}"},
        ]
        return sent

    there = refused(lambda: bobs.create_job(pool="local", body=inside("checkpoints")))
    not_there = refused(lambda: bobs.create_job(pool="local", body=inside("nothing-here")))

    assert there.message.startswith("datasources[0].name: Volume “team-a” " + NOT_OFFERED_EN)
    assert there.message == not_there.message.replace("nothing-here", "checkpoints")
    assert "datasources[1]" not in there.message
    assert not Job.objects.exists()


@pytest.mark.usefixtures("runner_settings")
def test_the_check_every_door_asks_makes_no_folder_of_a_volume_not_offered(volumes, team_a, bob):
    """The wizard's submit, Run again and the APIs ask pool_refusals: it made a refused
    volume's missing folder (the backend's check creates a volume's root)."""
    del_root = volumes["team-a"]
    for child in del_root.iterdir():
        child.rmdir()
    del_root.rmdir()
    sent = S.parse_document(
        {
            **body(),
            "datasources": [
                {
                    "type": "hostpath",
                    "name": "team-a",
                    "mountPath": "/ckpt",
                    "options": {"readOnly": True},
                },
                {"type": "hostpath", "name": "scratch", "mountPath": "/ckpt/x"},
            ],
        },
        resource_pool_id="local",
    )

    refusals = W.pool_refusals(sent, W.find_pool("local"), owner=bob)

    assert list(refusals) == ["datasources[0].name"]
    assert not del_root.exists()


@pytest.mark.usefixtures("runner_settings")
def test_the_v2_api_refuses_a_volume_not_offered_and_a_read_only_one_mounted_read_write(
    volumes, team_a, wsgi, bob
):
    bobs = _bob_api(wsgi, bob)
    theirs = v2_body(datasources=[{"type": "hostpath", "name": "shared", "mountPath": "/s"}])
    writing = v2_body(datasources=[{"type": "hostpath", "name": "models", "mountPath": "/m"}])

    not_offered = refused(lambda: bobs.create_job(pool="local", body=theirs, version=V2))
    read_only = refused(lambda: bobs.create_job(pool="local", body=writing, version=V2))

    assert not_offered.message.startswith("datasources[0].name: Volume “shared” " + NOT_OFFERED_EN)
    assert "read-only for everyone" in read_only.message
    assert read_only.message.startswith("datasources[0].options.readOnly:")
    assert not Job.objects.exists()
    reading = v2_body(
        datasources=[
            {"type": "hostpath", "name": "models", "mountPath": "/m", "options": {"readOnly": True}}
        ]
    )
    assert bobs.create_job(pool="local", body=reading, version=V2)["jobId"]


@pytest.mark.usefixtures("runner_settings")
def test_a_team_member_and_a_superuser_create_jobs_on_the_teams_volume(
    volumes, team_a, wsgi, api, superuser
):
    from jobs.api_keys import api_key_create

    ours = body()
    ours["datasources"] = [{"type": "hostpath", "name": "team-a", "mountPath": "/ckpt"}]
    key, secret = api_key_create(owner=superuser)

    assert api.create_job(pool="local", body=ours)["jobId"]
    assert v1.client_for(wsgi, key.access_key_id, secret).create_job(pool="local", body=ours)


# -- the runner ----------------------------------------------------------------------------


@pytest.mark.usefixtures("runner_settings")
def test_a_job_queued_before_its_owner_left_the_group_fails_at_start_and_mounts_nothing(
    volumes, team_a, alice
):
    spec = make_spec(
        "touch /ckpt/written-by-the-job",
        datasources=[S.Datasource("hostpath", "team-a", mount_path="/ckpt")],
    )
    job = submit(alice, spec)
    alice.groups.remove(team_a)

    run_until(Worker(), lambda: status_of(job) in (JobStatus.SUCCEEDED, JobStatus.FAILED))

    assert job.status == JobStatus.FAILED
    assert job.status_reason == (
        "无法启动：您的账号已不在可挂载卷“team-a”的用户组中：请复制该任务（复制）并在副本中选择其他卷，"
        "或请管理员将您加入该卷的某个用户组。"
    )
    assert not (volumes["team-a"] / "written-by-the-job").exists()


@pytest.mark.usefixtures("runner_settings")
def test_a_job_refused_its_volume_at_start_never_started_and_counts_as_no_job_in_usage(
    volumes, team_a, alice, alice_client
):
    """qa106: it said "Started on this machine with … card 7" and then StartFailed, and the
    usage pages counted it as a job run (任务数 2, 0.00 card-hours)."""
    spec = make_spec("true", datasources=[S.Datasource("hostpath", "team-a", mount_path="/ckpt")])
    job = submit(alice, spec)
    alice.groups.remove(team_a)

    run_until(Worker(), lambda: status_of(job) == JobStatus.FAILED, what="the job to fail")
    page = alice_client.get("/account/usage/", HTTP_ACCEPT_LANGUAGE="en")
    sheet = alice_client.get("/account/usage/", {"format": "csv"}).content.decode("utf-8-sig")

    assert page.context["report"].total.jobs == 0
    assert 'id="usage-jobs">0</dd>' in page.content.decode()
    assert job.public_id not in sheet
    job.refresh_from_db()
    assert job.started_at is None
    reasons = list(job.events.values_list("reason", flat=True))
    assert "Started" not in reasons and reasons.count("StartFailed") == 1


@pytest.mark.usefixtures("runner_settings")
def test_a_job_of_a_team_member_mounts_the_teams_volume(volumes, team_a, alice):
    spec = make_spec(
        "touch /ckpt/written-by-the-job",
        datasources=[S.Datasource("hostpath", "team-a", mount_path="/ckpt")],
    )
    job = submit(alice, spec)

    run_until(Worker(), lambda: status_of(job) in (JobStatus.SUCCEEDED, JobStatus.FAILED))

    assert job.status == JobStatus.SUCCEEDED, job.status_reason
    assert (volumes["team-a"] / "written-by-the-job").exists()


def test_a_user_offered_no_volume_is_not_told_to_name_a_folder_of_the_machine(
    settings, tmp_path, bob
):
    settings.LOCAL_VOLUMES = f"team-a={tmp_path}@team-a"
    client = Client()
    client.force_login(bob)
    draft = new_draft(client)
    complete_steps(client, draft, upto=W.DATA)

    page = client.get(step_url(draft, W.DATA)).content.decode()
    r = post_step(
        client,
        draft,
        W.DATA,
        data_data(mounts=(("hostpath", "", "/data"),), **{"mounts-0-source_path": "/etc"}),
    )

    assert 'name="mounts-0-name"' not in page  # no row to start from
    assert 'id="no-volume-help"' in page and "未向您提供可挂载的卷" in page
    assert 'id="node-disk-help"' not in page
    assert "请选择文件系统或存储卷。" in field_errors(r, "id_mounts-0-name")
    assert r.status_code == 200 and W.DATA not in Draft.objects.get(pk=draft.pk).completed_steps


@pytest.mark.usefixtures("runner_settings")
def test_the_job_page_reads_no_event_files_of_a_volume_its_owner_may_no_longer_mount(
    volumes, team_a, alice
):
    from jobs import tensorboard as tb

    spec = make_spec(
        "true",
        datasources=[S.Datasource("hostpath", "team-a", mount_path="/ckpt")],
        tensorboard=S.TensorboardConfig(enable=True, log_path="/ckpt/tb"),
    )
    job = submit(alice, spec)
    (volumes["team-a"] / "tb").mkdir()

    before = tb.log_folder(job.job_spec(), owner=alice)
    alice.groups.remove(team_a)
    after = tb.log_folder(job.job_spec(), owner=alice)

    assert isinstance(before, tb.LogFolder)
    assert isinstance(after, str) and "team-a" in after


# -- moving a user between groups (the admin) --------------------------------------------


def moved_to(client: Client, user, *groups: Group) -> str:
    """What the admin says on saving `user` in `groups` alone (English)."""
    from .test_admin import user_form

    form = user_form(user, groups=[g.pk for g in groups])
    page = reverse("admin:auth_user_change", args=[user.pk])
    return html.unescape(client.post(page, form, follow=True).content.decode())


@pytest.fixture
def superuser_client(superuser) -> Client:
    client = Client(headers={"Accept-Language": "en"})
    client.force_login(superuser)
    return client


def test_moving_a_user_out_of_a_volumes_group_names_their_queued_jobs_that_mount_it(
    volumes, team_a, alice, superuser_client
):
    """qa106: the save said nothing, and those jobs later failed at start."""
    team_b = Group.objects.create(name="team-b")
    on_team_a = submit(
        alice, make_spec("true", datasources=[S.Datasource("hostpath", "team-a", "/ckpt")])
    )
    on_shared = submit(
        alice, make_spec("true", datasources=[S.Datasource("hostpath", "shared", "/s")])
    )
    submit(alice, make_spec("true"))  # on the open scratch volume: nothing lost

    said = moved_to(superuser_client, alice, team_b)

    assert (
        "The account alice is no longer in a group that may mount “team-a”: 1 queued job of "
        "theirs mounts "
        "it and fails when it comes to start. Stop it, or have them copy it with another "
        f'volume: <a href="/admin/jobs/job/{on_team_a.pk}/change/">{on_team_a.public_id}</a>'
    ) in said
    assert on_shared.public_id not in said  # team-b may mount it too
    assert list(alice.groups.values_list("name", flat=True)) == ["team-b"]


def test_moving_a_user_whose_jobs_lose_no_volume_says_nothing_of_volumes(
    volumes, team_a, alice, superuser_client
):
    submit(alice, make_spec("true", datasources=[S.Datasource("hostpath", "shared", "/s")]))
    team_b = Group.objects.create(name="team-b")

    said = moved_to(superuser_client, alice, team_a, team_b)

    assert "no longer in a group" not in said
    assert set(alice.groups.values_list("name", flat=True)) == {"team-a", "team-b"}


def test_moving_a_user_between_groups_of_other_card_quotas_says_their_queued_jobs_wait_under_them(
    volumes, team_a, alice, superuser_client
):
    from jobs.models import CardQuota

    team_b = Group.objects.create(name="team-b")
    CardQuota.objects.create(group=team_a, max_cards=8)
    CardQuota.objects.create(group=team_b, max_cards=2)
    submit(alice, make_spec("true"))

    said = moved_to(superuser_client, alice, team_b)
    unchanged = moved_to(superuser_client, alice, team_b)

    assert (
        "The card quotas that apply to alice changed with their groups: their 1 queued local "
        f'job starts under the new ones. <a href="/admin/jobs/job/?owner__id__exact={alice.pk}">'
        "Their jobs</a>"
    ) in said
    assert "card quotas that apply" not in unchanged
