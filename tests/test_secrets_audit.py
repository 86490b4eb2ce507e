"""QA 53, an audit of secrets (secret env values, registry passwords, a chat bot's signing
secret, log-in passwords, the database's password): never rendered back, logged or put in
events, on the surfaces the earlier rounds had not covered. The others are tested where
their feature is (tests/test_security.py, test_wizard_features.py, test_job_compare.py,
test_api.py, test_wizard_import.py, test_runner_hostile.py...)."""

from __future__ import annotations

import json
import re

import pytest
from django.db import connection
from django.test import Client
from django.urls import reverse

from jobs import spec as S
from jobs import wizard as W
from jobs.models import Draft, Job, JobStatus
from jobs.runner import replica_state_dir
from jobs.worker import Worker
from tests.runner_helpers import (  # noqa: F401  (runner_settings: a fixture)
    UNTIL_THE_GATE_OPENS,
    as_nobody,
    make_spec,
    open_gate,
    run_until,
    runner_settings,
    status_of,
    submit,
)
from tests.test_wizard import (  # noqa: F401  (_local_pool: the wizard's pool of cards)
    _local_pool,
    advanced_data,
    complete_steps,
    image_data,
    new_draft,
    post_step,
    seen_on,
    step_url,
)

ENV_SECRET = "hf_audit_env_value_53"
REGISTRY_PASSWORD = "audit-registry-password-53"
BOT_SECRET = "SECaudit0bot0signing053"
LOGIN_PASSWORD = "audit-login-password-53"
DATABASE_PASSWORD = "audit-database-password-53"
BOT_HOOK = (
    "https://oapi.dingtalk.com/robot/send?access_token=0123456789abcdef0123456789abcdef"
    f"#secret={BOT_SECRET}"
)


def table_gone(name: str) -> None:
    """The database losing a table under the console (a restore from before a migration, a
    database reset while it runs): the next request reading it fails with a 500."""
    # PostgreSQL refuses to drop a table others' foreign keys name, unless they go too.
    cascade = " CASCADE" if connection.vendor == "postgresql" else ""
    with connection.cursor() as cursor:
        cursor.execute(f"DROP TABLE {connection.ops.quote_name(name)}{cascade}")


def error_page(response) -> str:
    assert response.status_code == 500
    page = response.content.decode()
    # Django's own page with the traceback, not the console's plain one.
    # SQLite's missing table is an OperationalError, PostgreSQL's a ProgrammingError.
    assert "Traceback" in page and ("OperationalError" in page or "ProgrammingError" in page)
    return page


# -- the error page under DEBUG ---------------------------------------------------------------


def test_a_failed_log_in_under_debug_shows_its_error_page_without_the_typed_password(
    alice, settings
):
    settings.DEBUG = True
    table_gone("jobs_loginfailure")
    client = Client(raise_request_exception=False)

    page = error_page(client.post("/login/", {"username": "alice", "password": LOGIN_PASSWORD}))

    assert LOGIN_PASSWORD not in page
    # The field's name is still there, for whoever reads the traceback.
    assert "password" in page


def test_a_failed_import_under_debug_shows_neither_the_pasted_secrets_nor_the_session(
    alice, settings
):
    settings.DEBUG = True
    client = Client(raise_request_exception=False)
    client.force_login(alice)
    body = {
        "name": "pasted",
        "queue": "default",
        "jobFramework": "PyTorchJob",
        "jobSpec": {
            "image": "python:3.12",
            "command": "true",
            "replicas": 1,
            "envs": [{"name": "HF_TOKEN", "value": ENV_SECRET}],
            "imageConfig": {"username": "robot", "password": REGISTRY_PASSWORD},
        },
        "console": {"secretEnvs": ["HF_TOKEN"], "alertChannels": {"webhooks": [BOT_HOOK]}},
    }
    table_gone("jobs_draft")

    page = error_page(
        client.post(reverse("wizard-import"), {"text": json.dumps(body), "resource_pool": "local"})
    )

    for secret in (ENV_SECRET, REGISTRY_PASSWORD, BOT_SECRET):
        assert secret not in page
    # Nor the session cookie that would log its reader in as alice.
    assert client.cookies["sessionid"].value not in page


def test_a_failed_wizard_step_under_debug_shows_no_secret_held_by_the_frames_variables(
    alice_client, alice, settings
):
    """A GET sends nothing: what the page could show is what the step read from the draft,
    in the traceback's variables."""
    draft = new_draft(alice_client)
    complete_steps(alice_client, draft, upto=W.IMAGE)
    typed = image_data(
        envs=[("HF_TOKEN", ENV_SECRET, True)],
        registry_username="robot",
        registry_password=REGISTRY_PASSWORD,
    )
    complete_steps(
        alice_client,
        draft,
        upto=W.REVIEW,
        **{
            W.IMAGE: typed,
            W.ADVANCED: advanced_data(alert_webhooks=BOT_HOOK, alert_items=["jobFailed"]),
        },
    )
    assert BOT_SECRET in json.dumps(Draft.objects.get(pk=draft.pk).data)
    settings.DEBUG = True
    client = Client(raise_request_exception=False)
    client.force_login(alice)
    # The review step renders the whole spec, then reads the jobs' names.
    table_gone("jobs_job")

    page = error_page(client.get(step_url(draft, W.REVIEW)))

    for secret in (ENV_SECRET, REGISTRY_PASSWORD, BOT_SECRET):
        assert secret not in page
    # Each frame's variables are still named.
    assert re.search(r"<td>draft</td>", page)


def test_under_runserver_the_error_page_hides_the_database_address_with_its_password(
    alice, settings
):
    """`manage.py runserver` (wsgiref) copies the server's environment into each request's."""
    settings.DEBUG = True
    client = Client(
        raise_request_exception=False,
        DATABASE_URL=f"postgres://console:{DATABASE_PASSWORD}@db.example.com/console",
    )
    table_gone("jobs_loginfailure")

    page = error_page(client.post("/login/", {"username": "alice", "password": "x"}))

    assert DATABASE_PASSWORD not in page
    assert "DATABASE_URL" in page


@pytest.mark.parametrize("debug", [False, True])
def test_the_server_log_of_a_failed_request_holds_no_typed_secret(alice, settings, caplog, debug):
    settings.DEBUG = debug
    client = Client(raise_request_exception=False)
    table_gone("jobs_loginfailure")

    client.post("/login/", {"username": "alice", "password": LOGIN_PASSWORD})

    assert "Internal Server Error: /login/" in caplog.text
    assert LOGIN_PASSWORD not in caplog.text


# -- the image step's paste box ------------------------------------------------------------

MARKED_NOTICE = "以下变量的名称看起来是保密信息，已标记为保密：HF_TOKEN、DB_PASSWORD。"


def stored_env_rows(draft: Draft) -> dict[str, tuple[str, bool]]:
    rows = W.rows_of(Draft.objects.get(pk=draft.pk).data[W.IMAGE], "env")
    return {W._one(r, "name"): (W._one(r, "value"), bool(W._one(r, "secret"))) for r in rows}


def test_envs_pasted_with_names_like_secrets_are_made_secret_and_never_shown_again(
    alice_client, alice
):
    """A `.env` file pasted whole: its lines cannot say which values are secret, as an
    import's body without `console.secretEnvs` cannot (README, "Import from a request")."""
    draft = new_draft(alice_client)
    complete_steps(alice_client, draft, upto=W.IMAGE)
    paste = f"HF_TOKEN={ENV_SECRET}\nexport DB_PASSWORD='{REGISTRY_PASSWORD}'\nLR=3e-4\n"

    r = post_step(alice_client, draft, W.IMAGE, image_data(env_paste=paste))
    page = alice_client.get(step_url(draft, W.IMAGE)).content.decode()

    assert r.status_code == 302
    assert stored_env_rows(draft) == {
        "HF_TOKEN": (ENV_SECRET, True),
        "DB_PASSWORD": (REGISTRY_PASSWORD, True),
        "LR": ("3e-4", False),
    }
    assert ENV_SECRET not in page and REGISTRY_PASSWORD not in page
    assert page.count('placeholder="******"') == 2 and 'value="3e-4"' in page
    assert MARKED_NOTICE in page

    # The rest of the way the values stay hidden, and the job gets them.
    complete_steps(
        alice_client,
        draft,
        **{
            W.IMAGE: image_data(
                envs=[("HF_TOKEN", "", True), ("DB_PASSWORD", "", True), ("LR", "3e-4")]
            )
        },
    )
    review = alice_client.get(step_url(draft, W.REVIEW)).content.decode()
    assert ENV_SECRET not in review and "HF_TOKEN=******" in review
    assert MARKED_NOTICE in review
    alice_client.post(reverse("wizard-submit", args=[draft.id]))
    job = Job.objects.get(owner=alice)
    envs = {e.name: (e.value, e.secret) for e in job.job_spec().envs}
    assert envs == {
        "HF_TOKEN": (ENV_SECRET, True),
        "DB_PASSWORD": (REGISTRY_PASSWORD, True),
        "LR": ("3e-4", False),
    }


def test_a_pasted_secret_is_not_shown_back_when_the_step_is_refused_for_another_field(
    alice_client,
):
    draft = new_draft(alice_client)
    complete_steps(alice_client, draft, upto=W.IMAGE)

    refused = post_step(
        alice_client, draft, W.IMAGE, image_data(image="", env_paste=f"HF_TOKEN={ENV_SECRET}")
    )
    refused_htmx = post_step(
        alice_client,
        draft,
        W.IMAGE,
        image_data(image="", env_paste=f"HF_TOKEN={ENV_SECRET}"),
        htmx=True,
    )

    for response in (refused, refused_htmx):
        assert response.status_code == 200
        assert ENV_SECRET not in response.content.decode()
    # Typed once, kept: nothing to type again.
    assert stored_env_rows(draft) == {"HF_TOKEN": (ENV_SECRET, True)}


def test_a_pasted_line_for_a_row_the_user_left_plain_keeps_it_plain(alice_client):
    """Unticked 保密 is the user's word on that name; a paste only changes its value."""
    draft = new_draft(alice_client)
    complete_steps(alice_client, draft, upto=W.IMAGE)

    post_step(
        alice_client,
        draft,
        W.IMAGE,
        image_data(envs=[("HF_TOKEN", "typed-plain")], env_paste="HF_TOKEN=pasted-plain"),
    )

    assert stored_env_rows(draft) == {"HF_TOKEN": ("pasted-plain", False)}


def test_pasted_envs_whose_names_are_no_secrets_stay_plain_and_nothing_is_said(alice_client):
    draft = new_draft(alice_client)
    complete_steps(alice_client, draft, upto=W.IMAGE)

    post_step(
        alice_client,
        draft,
        W.IMAGE,
        image_data(env_paste="TOKENIZER_PATH=/models/tok\nMAX_TOKENS=4096\nHF_TOKEN="),
    )
    page = alice_client.get(step_url(draft, W.IMAGE)).content.decode()

    assert stored_env_rows(draft) == {
        "TOKENIZER_PATH": ("/models/tok", False),
        "MAX_TOKENS": ("4096", False),
        "HF_TOKEN": ("", False),
    }
    assert "已标记为保密" not in page


def test_pasted_passwords_under_the_names_their_tools_read_are_made_secret(alice_client):
    """libpq reads PGPASSWORD, MySQL's clients MYSQL_PWD, the Kaggle API KAGGLE_KEY; a
    passphrase unlocks a key and a connection string holds one (review35: all stayed plain
    values, shown on the step, the review, the job page and to reviewers)."""
    draft = new_draft(alice_client)
    complete_steps(alice_client, draft, upto=W.IMAGE)
    names = [
        "PGPASSWORD",
        "MYSQL_PWD",
        "KAGGLE_KEY",
        "GPG_PASSPHRASE",
        "AZURE_STORAGE_CONNECTION_STRING",
    ]
    paste = "".join(f"{name}={ENV_SECRET}-{index}\n" for index, name in enumerate(names))

    post_step(alice_client, draft, W.IMAGE, image_data(env_paste=paste))
    page = alice_client.get(step_url(draft, W.IMAGE)).content.decode()

    assert stored_env_rows(draft) == {
        name: (f"{ENV_SECRET}-{index}", True) for index, name in enumerate(names)
    }
    assert ENV_SECRET not in page
    assert f"已标记为保密：{'、'.join(names)}。" in page


def test_a_tokenizers_special_tokens_and_a_password_rule_pasted_stay_plain(alice_client):
    """EOS_TOKEN's `</s>` made secret showed as ****** in every sample the job's log printed;
    PASSWORD_MIN_LEN is a rule, not a password (review35)."""
    draft = new_draft(alice_client)
    complete_steps(alice_client, draft, upto=W.IMAGE)

    post_step(
        alice_client,
        draft,
        W.IMAGE,
        image_data(
            env_paste="EOS_TOKEN=</s>\npad_token=<pad>\nPASSWORD_MIN_LEN=12\nMAX_TOKEN=2048\n"
            f"HF_TOKEN={ENV_SECRET}"
        ),
    )
    page = alice_client.get(step_url(draft, W.IMAGE)).content.decode()

    assert stored_env_rows(draft) == {
        "EOS_TOKEN": ("</s>", False),
        "pad_token": ("<pad>", False),
        "PASSWORD_MIN_LEN": ("12", False),
        "MAX_TOKEN": ("2048", False),
        "HF_TOKEN": (ENV_SECRET, True),
    }
    assert "已标记为保密：HF_TOKEN。" in page


def test_envs_pasted_that_name_where_a_secret_is_kept_stay_plain(alice_client):
    """Their values are paths: HF_TOKEN_PATH (huggingface_hub's token file), Docker's
    *_PASSWORD_FILE, a folder of secrets. Made secret, each path was ****** in the log
    (review38)."""
    draft = new_draft(alice_client)
    complete_steps(alice_client, draft, upto=W.IMAGE)

    post_step(
        alice_client,
        draft,
        W.IMAGE,
        image_data(
            env_paste="HF_TOKEN_PATH=/root/.cache/huggingface/token\n"
            "POSTGRES_PASSWORD_FILE=/run/secrets/db\nSECRETS_DIR=/mnt/secrets\n"
            f"apiKeyFolder=/mnt/keys\nHF_TOKEN={ENV_SECRET}"
        ),
    )
    page = alice_client.get(step_url(draft, W.IMAGE)).content.decode()

    assert stored_env_rows(draft) == {
        "HF_TOKEN_PATH": ("/root/.cache/huggingface/token", False),
        "POSTGRES_PASSWORD_FILE": ("/run/secrets/db", False),
        "SECRETS_DIR": ("/mnt/secrets", False),
        "apiKeyFolder": ("/mnt/keys", False),
        "HF_TOKEN": (ENV_SECRET, True),
    }
    assert "已标记为保密：HF_TOKEN。" in page


def test_a_person_pasting_an_env_file_sees_its_token_made_secret_after_next_and_back(
    logged_in_page,
):
    from playwright.sync_api import expect

    from tests.test_wizard_browser import fill_basic, next_step, start

    page = logged_in_page
    start(page)
    fill_basic(page)
    page.fill("#id_image", "registry.example.com/train/pytorch:2.5")
    page.fill("#id_command", "torchrun train.py")
    page.fill("#id_env_paste", f"HF_TOKEN={ENV_SECRET}\nLR=3e-4\n")
    next_step(page, "resources")
    page.click("#wizard-back")
    page.wait_for_url(re.compile(r"/image/$"))

    expect(page.locator("#import-notices")).to_contain_text("HF_TOKEN")
    token_value = page.locator("input[name=env-0-value]")
    expect(token_value).to_have_value("")
    expect(token_value).to_have_attribute("placeholder", "******")
    expect(page.locator("input[name=env-0-secret]")).to_be_checked()
    expect(page.locator("input[name=env-1-value]")).to_have_value("3e-4")
    assert ENV_SECRET not in page.content()


# -- the local runner's run folder -------------------------------------------------------------


def test_a_token_a_job_saves_in_its_home_cannot_be_read_by_another_account_on_the_machine(
    runner_settings,  # noqa: F811
    alice,
    nobody_folder,
):
    """HOME is the replica's /tmp, a folder of LOCAL_RUN_DIR: `huggingface-cli login` saves
    the token there (`~/.cache/huggingface/token`) as any file, 0644 under the usual umask.
    Another account of the machine (here nobody) reaches LOCAL_RUN_DIR when the folders above
    it let it in, as they must for jobs run as their own users (LOCAL_JOB_UID_BASE)."""
    nobody_folder.chmod(0o755)
    runner_settings.LOCAL_RUN_DIR = nobody_folder / "runs"
    job = submit(
        alice,
        make_spec(
            'mkdir -p ~/.cache/huggingface && echo "$HF_TOKEN" > ~/.cache/huggingface/token && '
            + UNTIL_THE_GATE_OPENS,
            envs=[S.Env("HF_TOKEN", ENV_SECRET, secret=True)],
        ),
    )
    worker = Worker()
    saved = replica_state_dir(job.public_id, 1, "master-0") / "tmp/.cache/huggingface/token"
    try:
        run_until(worker, saved.exists, what="the job to save its token")
        assert saved.read_text() == ENV_SECRET + "\n"  # the job's own file, as it wrote it

        def read_as_another_account() -> str:
            try:
                return saved.read_text()
            except PermissionError:
                return "refused"

        assert as_nobody(read_as_another_account) == "refused"
    finally:
        open_gate(runner_settings)
        run_until(worker, lambda: status_of(job) == JobStatus.SUCCEEDED)


def test_a_step_refused_for_another_tabs_save_asks_for_a_pasted_secret_again(alice_client):
    """Refused, the step is drawn from what was sent, and a pasted secret now shows masked:
    without the notice it would be lost unsaid when the page is sent again."""
    draft = new_draft(alice_client)
    complete_steps(alice_client, draft, upto=W.RESOURCES)
    seen_by_b = seen_on(alice_client.get(step_url(draft, W.IMAGE)))
    post_step(alice_client, draft, W.IMAGE, image_data(command="torchrun from-tab-a.py"))

    r = post_step(
        alice_client,
        draft,
        W.IMAGE,
        image_data(env_paste=f"HF_TOKEN={ENV_SECRET}", seen=seen_by_b),
    )

    page = r.content.decode()
    notice = re.search(r'id="stale-notice">([^<]*)<', page).group(1)
    assert r.status_code == 200 and "请重新填写" in notice
    assert ENV_SECRET not in page


def test_a_step_refused_for_another_tabs_save_asks_again_for_a_secret_left_in_the_paste_box(
    alice_client,
):
    """left33: a line the full table left in the box shows masked too, so it is typed again."""
    draft = new_draft(alice_client)
    complete_steps(alice_client, draft, upto=W.RESOURCES)
    seen_by_b = seen_on(alice_client.get(step_url(draft, W.IMAGE)))
    post_step(alice_client, draft, W.IMAGE, image_data(command="torchrun from-tab-a.py"))
    full = [(f"VAR_{i}", str(i)) for i in range(50)]

    r = post_step(
        alice_client,
        draft,
        W.IMAGE,
        image_data(envs=full, env_paste=f"DB_PASSWORD={ENV_SECRET}", seen=seen_by_b),
    )

    page = r.content.decode()
    notice = re.search(r'id="stale-notice">([^<]*)<', page).group(1)
    assert r.status_code == 200 and "请重新填写" in notice
    assert ENV_SECRET not in page and "DB_PASSWORD=******" in page


# -- training metrics -------------------------------------------------------------------------


def test_a_run_or_tag_named_with_the_jobs_secret_shows_it_masked_on_its_page_and_in_compare(
    runner_settings,  # noqa: F811
    alice,
    alice_client,
):
    """The job names its runs (folders) and tags: its output, masked as its log is."""
    from tests.test_job_compare import compare_url
    from tests.test_tensorboard import tb_job, volume, write_scalars

    secret_env = [S.Env("HF_TOKEN", ENV_SECRET, secret=True)]
    job = tb_job(alice, envs=secret_env)
    other = tb_job(alice)
    logs = volume(runner_settings) / "tb"
    write_scalars(logs / f"run-{ENV_SECRET}", f"eval/{ENV_SECRET}/loss", [1.0, 0.5])
    write_scalars(logs / "plain-run", "loss", [2.0, 1.0])

    page = alice_client.get(reverse("job-detail", args=[job.public_id])).content.decode()
    compared = alice_client.get(compare_url(job, other)).content.decode()

    for shown in (page, compared):
        assert ENV_SECRET not in shown
        assert "run-****** / eval/******/loss" in shown
        assert "plain-run / loss" in shown
