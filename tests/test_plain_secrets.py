"""Secrets typed where the console shows what is typed (jobs.plain_secrets): the command and
plain env values are shown as typed on the review step, the job page and Copy & edit (a mask
would be what a copy runs), so the image step warns on the field, the review step and an
import repeat it, and the API's CreateJob answers it in `warnings`; never a refusal, and the
warning never quotes the value."""

from __future__ import annotations

import json
import re

import pytest
from django.utils import translation

from jobs import spec as S
from jobs import wizard as W
from jobs.models import Job
from jobs.plain_secrets import secrets_in_plain_text

from . import test_api as v1
from .runner_helpers import runner_settings  # noqa: F401
from .test_api import body
from .test_api_unknown_fields import create_v1
from .test_api_v2 import action, v2_body
from .test_wizard import (  # noqa: F401  (_local_pool: the wizard's pool of cards)
    _local_pool,
    complete_steps,
    image_data,
    new_draft,
    post_step,
    step_url,
)
from .test_wizard_import import import_body

wsgi, alice_key, api, fake = v1.wsgi, v1.alice_key, v1.api, v1.fake

# Token-shaped texts, put together here so that this file holds none whole.
HF = "hf_" + "Ab3dEf6hIj9kLm2nOp5qRs8tUv1wXy4zAB"
GITHUB = "ghp_" + "a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6q7R8"
GITHUB_PAT = "github_pat_" + "11ABCDEFG0" + "a" * 30 + "_" + "b" * 20
OPENAI = "sk-" + "proj-Ab3dEf6hIj9kLm2nOp5qRs8t"
ANTHROPIC = "sk-" + "ant-api03-Ab3dEf6hIj9kLm2nOp5qRs8tUv1w_Xy4zAB-Cd7eFg0hIj3kLm6n"
DEEPSEEK = "sk-" + "0123456789abcdef0123456789abcdef"
AWS = "AKIA" + "IOSFODNN7EXAMPLE"
SLACK = "xoxb-" + "1234567890-AbCdEfGhIj"
SECRET_VALUE = "s3cret-wandb-key-0042"


def spec_with(command: str, envs=()) -> S.JobSpec:
    return S.JobSpec(command=command, envs=[S.Env(*env) for env in envs])


@pytest.mark.parametrize(
    "token, kind",
    [
        (HF, "huggingface"),
        (GITHUB, "github"),
        (GITHUB_PAT, "github"),
        (OPENAI, "sk"),
        (ANTHROPIC, "sk"),
        (DEEPSEEK, "sk"),
        (AWS, "aws"),
        (SLACK, "slack"),
    ],
)
def test_a_well_known_token_typed_in_the_command_is_found_by_its_kind(token, kind):
    found = secrets_in_plain_text(spec_with(f"huggingface-cli login --token {token} && train"))

    assert [(f.place, f.token, f.secret_env) for f in found] == [("command", kind, "")]
    assert token not in found[0].message() and token not in found[0].key


@pytest.mark.parametrize(
    "command",
    [
        "pip install scikit-learn sk-video && python train.py --sk-learn-rate 0.1",
        "HF_HUB_ENABLE_HF_TRANSFER=1 python -c 'import hf_transfer_enabled_for_all_downloads'",
        "python train.py --data /data/ghp_models_for_every_experiment_we_have_run",
        "echo $HF_TOKEN; echo AKIA; mysk-Ab3dEf6hIj9kLm2nOp5qRs8t",
        "xoxb-not-a-slack-token-at-all-here",
        # Names of short words, numbers and dates (review38: warned of as API keys).
        "python train.py --wandb_run sk-llama-7b-run-2024-06-01 --seed 42",
        "python train.py --output_dir /mnt/sk-experiment-2024-01-15_run1",
    ],
)
def test_ordinary_words_that_start_like_a_token_are_not_warned_of(command):
    assert secrets_in_plain_text(spec_with(command)) == []


def test_a_secret_envs_value_in_the_command_or_a_plain_env_is_named_by_that_env():
    spec = spec_with(
        f"wandb login {SECRET_VALUE} && python train.py",
        envs=[
            ("WANDB_API_KEY", SECRET_VALUE, True),
            ("WANDB_URL", f"https://u:{SECRET_VALUE}@wandb.example.com", False),
            ("SHORT", "on12", True),  # under 8 characters: matches ordinary words
            ("MODE", "on12-then", False),
        ],
    )

    found = secrets_in_plain_text(spec)

    assert [(f.place, f.env_index, f.secret_env) for f in found] == [
        ("command", None, "WANDB_API_KEY"),
        ("WANDB_URL", 1, "WANDB_API_KEY"),
    ]
    assert all(SECRET_VALUE not in f.message() for f in found)


def test_a_token_in_a_secret_env_is_no_warning_and_in_the_command_it_is_named_by_that_env():
    spec = spec_with(f"login {HF}", envs=[("HF_TOKEN", HF, True)])

    found = secrets_in_plain_text(spec)

    assert [(f.place, f.secret_env, f.token) for f in found] == [("command", "HF_TOKEN", "")]


def test_a_token_or_a_secret_envs_value_typed_in_the_entrypoint_is_found_there():
    """The entrypoint (运行命令) is shown as typed as the command is (review38: it was not
    looked at, and `env HF_TOKEN=hf_… python` there was stored and shown back unsaid)."""
    curl = S.JobSpec(entrypoint=f"bash -c \"curl -H 'Authorization: Bearer {OPENAI}'\"")
    env_run = S.JobSpec(
        entrypoint=f"env WANDB_API_KEY={SECRET_VALUE} python",
        envs=[S.Env("WANDB_API_KEY", SECRET_VALUE, True)],
    )

    [token] = secrets_in_plain_text(curl)
    [value] = secrets_in_plain_text(env_run)

    assert (token.place, token.env_index, token.token) == ("entrypoint", None, "sk")
    assert (value.place, value.secret_env) == ("entrypoint", "WANDB_API_KEY")
    assert token.field_path() == value.field_path() == "console.entrypoint"
    assert OPENAI not in token.message() and SECRET_VALUE not in value.message()


def test_an_env_named_command_or_entrypoint_is_warned_of_as_that_env_not_as_the_command():
    """Review45: a plain env named `command` (a lowercase name is a name) holding a token was
    told "The command holds what looks like…, write $ and that variable's name in the
    command", on its own row, and the API said so of envs[0].value."""
    spec = spec_with(
        "python train.py",
        envs=[("command", f"login {HF}", False), ("entrypoint", f"x {OPENAI}", False)],
    )

    found = secrets_in_plain_text(spec)

    assert [(f.place, f.env_index, f.token) for f in found] == [
        ("command", 0, "huggingface"),
        ("entrypoint", 1, "sk"),
    ]
    for each in found:
        with translation.override("en"):
            assert each.message().startswith(f"{each.place} looks like ")
            assert "tick Secret for it" in each.message()
            field = each.field_path()
            assert field == f"envs[{each.env_index}].value"
            assert each.api_message(field).startswith(f"{field} looks like ")
            assert f"make {each.place} secret" in each.api_message(field)


# -- the wizard ---------------------------------------------------------------------------


def command_warning(page) -> str:
    found = re.search(r'id="command-secrets"[^>]*>(.*?)</div>', page.content.decode(), re.S)
    return re.sub(r"<[^>]+>", " ", found.group(1)) if found else ""


def test_a_token_typed_in_the_command_is_warned_of_on_its_field_and_the_step_still_passes(
    alice_client,
):
    draft = new_draft(alice_client)
    complete_steps(alice_client, draft, upto=W.IMAGE)

    r = post_step(alice_client, draft, W.IMAGE, image_data(command=f"login {HF} && torchrun t.py"))

    assert r.status_code == 302 and r["Location"] == step_url(draft, W.RESOURCES)
    warning = command_warning(alice_client.get(step_url(draft, W.IMAGE)))
    assert "运行参数中有疑似 Hugging Face 令牌（hf_…）" in warning
    assert "勾选“保密”" in warning
    assert HF not in warning


def entrypoint_warning(page) -> str:
    found = re.search(r'id="entrypoint-secrets"[^>]*>(.*?)</div>', page.content.decode(), re.S)
    return re.sub(r"<[^>]+>", " ", found.group(1)) if found else ""


def test_a_token_typed_in_the_entrypoint_is_warned_of_under_it_in_both_languages(
    alice_client,
):
    typed = image_data(entrypoint=f"env HF_TOKEN={HF} python", command="train.py")
    draft = new_draft(alice_client)
    complete_steps(alice_client, draft, upto=W.IMAGE)

    r = post_step(alice_client, draft, W.IMAGE, typed)

    assert r.status_code == 302 and r["Location"] == step_url(draft, W.RESOURCES)
    chinese = alice_client.get(step_url(draft, W.IMAGE))
    alice_client.cookies["django_language"] = "en"
    english = alice_client.get(step_url(draft, W.IMAGE))

    assert "运行命令中有疑似 Hugging Face 令牌（hf_…）" in entrypoint_warning(chinese)
    assert "从运行命令中删去" in entrypoint_warning(chinese)
    assert (
        entrypoint_warning(english)
        .strip()
        .startswith("The entrypoint holds what looks like a Hugging Face token (hf_…)")
    )
    assert command_warning(chinese) == command_warning(english) == ""
    assert HF not in entrypoint_warning(chinese) + entrypoint_warning(english)
    draft.refresh_from_db()
    assert draft.data[W.IMAGE]["entrypoint"] == [f"env HF_TOKEN={HF} python"]  # as typed


def test_the_review_step_lists_the_entrypoints_token_and_got_it_hides_it(alice_client):
    typed = image_data(entrypoint=f"bash -c \"curl -H 'Authorization: Bearer {OPENAI}'\"")
    draft = new_draft(alice_client)
    complete_steps(alice_client, draft, **{W.IMAGE: typed})

    page = alice_client.get(step_url(draft, W.REVIEW)).content.decode()

    notice = re.search(r'id="plain-secrets-notice"[^>]*>(.*?)</div>', page, re.S)
    assert notice and "运行命令中有疑似 API 密钥（sk-…）" in notice.group(1)
    assert OPENAI not in notice.group(1)
    image = alice_client.get(step_url(draft, W.IMAGE)).content.decode()
    dismiss = re.search(r'value="(dismiss-secret-[0-9a-f]{16})"', image).group(1)
    post_step(alice_client, draft, W.IMAGE, typed, action=dismiss)
    assert entrypoint_warning(alice_client.get(step_url(draft, W.IMAGE))) == ""
    assert (
        "plain-secrets-notice" not in alice_client.get(step_url(draft, W.REVIEW)).content.decode()
    )


def test_a_secret_envs_value_in_a_plain_env_is_warned_of_on_that_row_in_english(alice_en):
    draft = new_draft(alice_en)
    complete_steps(alice_en, draft, upto=W.IMAGE)
    envs = [("WANDB_API_KEY", SECRET_VALUE, True), ("WANDB_URL", f"x{SECRET_VALUE}", False)]
    post_step(alice_en, draft, W.IMAGE, image_data(envs=envs))

    page = alice_en.get(step_url(draft, W.IMAGE)).content.decode()

    rows = re.findall(r'<tr class="env-row">(.*?)</tr>', page, re.S)
    assert "env-secrets" not in rows[0]
    assert (
        "WANDB_URL holds the value of the secret variable WANDB_API_KEY, and is shown as typed"
        in rows[1]
    )
    assert "command-secrets" not in page
    # The secret row's value is not rendered back (the plain one is, as typed).
    secret_input = re.search(r'<input[^>]*id="id_env-0-value"[^>]*>', page).group(0)
    assert SECRET_VALUE not in secret_input


def test_got_it_hides_that_warning_keeps_what_was_typed_and_a_new_token_is_warned_of_again(
    alice_client,
):
    draft = new_draft(alice_client)
    complete_steps(alice_client, draft, upto=W.IMAGE)
    post_step(alice_client, draft, W.IMAGE, image_data(command=f"login {HF}"))
    page = alice_client.get(step_url(draft, W.IMAGE)).content.decode()
    dismiss = re.search(r'value="(dismiss-secret-[0-9a-f]{16})"', page).group(1)

    typed = image_data(command=f"login {HF} && torchrun t.py")
    r = post_step(alice_client, draft, W.IMAGE, typed, action=dismiss)

    assert r.status_code == 302
    page = alice_client.get(step_url(draft, W.IMAGE))
    assert command_warning(page) == ""
    draft.refresh_from_db()
    assert draft.data[W.IMAGE]["command"] == [f"login {HF} && torchrun t.py"]
    assert HF not in json.dumps(draft.data[W.PLAIN_SECRETS_DISMISSED])

    post_step(alice_client, draft, W.IMAGE, image_data(command=f"login {HF} {GITHUB}"))
    warning = command_warning(alice_client.get(step_url(draft, W.IMAGE)))
    assert "GitHub" in warning and "Hugging Face" not in warning


def test_the_review_step_repeats_the_warning_until_it_is_hidden(alice_client):
    draft = new_draft(alice_client)
    complete_steps(alice_client, draft, **{W.IMAGE: image_data(command=f"aws configure set {AWS}")})

    page = alice_client.get(step_url(draft, W.REVIEW)).content.decode()

    notice = re.search(r'id="plain-secrets-notice"[^>]*>(.*?)</div>', page, re.S)
    assert notice and "AWS 访问密钥 ID（AKIA…）" in notice.group(1)
    assert step_url(draft, W.IMAGE) in notice.group(1)
    image = alice_client.get(step_url(draft, W.IMAGE)).content.decode()
    dismiss = re.search(r'value="(dismiss-secret-[0-9a-f]{16})"', image).group(1)
    post_step(
        alice_client,
        draft,
        W.IMAGE,
        image_data(command=f"aws configure set {AWS}"),
        action=dismiss,
    )
    assert (
        "plain-secrets-notice" not in alice_client.get(step_url(draft, W.REVIEW)).content.decode()
    )


def test_an_imported_body_with_a_token_in_its_command_says_so_in_the_imports_notices(
    alice_client,
):
    job_body = body(command=f"huggingface-cli login --token {HF}")

    r = import_body(alice_client, json.dumps(job_body), follow=True)

    page = r.content.decode()
    notices = re.search(r'id="import-notices"[^>]*>(.*?)</div>', page, re.S).group(1)
    assert "运行参数中有疑似 Hugging Face 令牌（hf_…）" in notices
    assert HF not in notices


def test_an_imported_body_with_a_token_in_its_entrypoint_says_so_in_the_imports_notices(
    alice_client,
):
    job_body = body(command="train.py", console={"entrypoint": f"env HF_TOKEN={HF} python"})

    r = import_body(alice_client, json.dumps(job_body), follow=True)

    page = r.content.decode()
    notices = re.search(r'id="import-notices"[^>]*>(.*?)</div>', page, re.S).group(1)
    assert "运行命令中有疑似 Hugging Face 令牌（hf_…）" in notices
    assert HF not in notices


# -- the API ------------------------------------------------------------------------------


@pytest.mark.usefixtures("runner_settings")
def test_a_v1_create_with_a_token_in_its_command_answers_a_warning_on_that_path(api):
    answer = create_v1(api, body(command=f"login {GITHUB} && python t.py"))

    assert answer["warnings"] == [
        {
            "code": "SecretInPlainText",
            "message": answer["warnings"][0]["message"],
            "fields": ["jobSpec.command"],
        }
    ]
    message = answer["warnings"][0]["message"]
    assert message.startswith("jobSpec.command holds what looks like a GitHub token")
    assert GITHUB not in message
    assert Job.objects.get(public_id=answer["result"]["jobId"])  # created all the same


@pytest.mark.usefixtures("runner_settings")
def test_a_v1_create_with_a_token_in_its_entrypoint_answers_a_warning_on_that_path(api):
    job_body = body(command="train.py", console={"entrypoint": f"env HF_TOKEN={HF} python"})

    answer = create_v1(api, job_body)

    assert [w["fields"] for w in answer["warnings"]] == [["console.entrypoint"]]
    message = answer["warnings"][0]["message"]
    assert message.startswith("console.entrypoint holds what looks like a Hugging Face token")
    assert "take it out of the entrypoint" in message
    assert HF not in json.dumps(answer)
    assert Job.objects.get(public_id=answer["result"]["jobId"])  # created all the same


@pytest.mark.usefixtures("runner_settings")
def test_a_v1_create_with_a_secret_envs_value_in_a_plain_env_names_that_env_path(api):
    job_body = body()
    job_body["jobSpec"]["envs"] = [
        {"name": "HF_TOKEN", "value": SECRET_VALUE},
        {"name": "HUB_URL", "value": f"https://user:{SECRET_VALUE}@hub.example.com"},
    ]

    answer = create_v1(api, job_body)

    assert [w["fields"] for w in answer["warnings"]] == [["jobSpec.envs[1].value"]]
    assert "secret env HF_TOKEN" in answer["warnings"][0]["message"]
    assert SECRET_VALUE not in json.dumps(answer)


@pytest.mark.usefixtures("runner_settings")
def test_a_v2_create_with_a_token_in_its_command_names_v2s_command(api):
    answer = action(
        api,
        "CreateJob",
        body=v2_body(command=f"login {SLACK}"),
        resourcePoolId="local",
        queueID="default",
    )

    assert [w["fields"] for w in answer["warnings"]] == [["command"]]
    assert SLACK not in json.dumps(answer)


@pytest.mark.usefixtures("runner_settings")
def test_a_create_with_no_secret_in_plain_text_answers_as_aihc_does(api):
    assert "warnings" not in create_v1(api, body(command="echo $HF_TOKEN"))


@pytest.mark.usefixtures("runner_settings")
def test_a_create_reading_its_token_from_the_file_an_env_names_is_no_warning_and_shows_the_path(
    api,
):
    """HF_TOKEN_PATH names the file huggingface_hub reads its token from: made secret for its
    name, the command reading that file was warned of as holding a secret (review38)."""
    path = "/mnt/cfs/secrets/hf/token"
    job_body = body(command=f"huggingface-cli login --token $(cat {path}) && python t.py")
    job_body["jobSpec"]["envs"] = [
        {"name": "HF_TOKEN_PATH", "value": path},
        {"name": "POSTGRES_PASSWORD_FILE", "value": "/run/secrets/postgres-password"},
    ]

    answer = create_v1(api, job_body)

    assert "warnings" not in answer
    spec = Job.objects.get(public_id=answer["result"]["jobId"]).job_spec()
    assert [(env.name, env.value, env.secret) for env in spec.envs] == [
        ("HF_TOKEN_PATH", path, False),
        ("POSTGRES_PASSWORD_FILE", "/run/secrets/postgres-password", False),
    ]
