"""The audit trail a team lead or staff member reads after an incident: the admin's history
(Django's LogEntry) as a list of its own, searchable and filterable, and never editable."""

from __future__ import annotations

from django.contrib.admin.models import CHANGE, LogEntry
from django.contrib.auth.models import Group, Permission, User
from django.test import Client

from jobs.models import CardQuota

HISTORY = "/admin/admin/logentry/"


def client_for(user: User) -> Client:
    client = Client()
    client.force_login(user)
    return client


def raise_quota(client: Client, quota: CardQuota, *, max_cards: int) -> None:
    response = client.post(
        f"/admin/jobs/cardquota/{quota.pk}/change/",
        {
            "user": "",
            "group": quota.group_id,
            "card_type": "",
            "max_cards": max_cards,
            "max_running_jobs": "",
        },
    )
    assert response.status_code == 302, response.content[:2000]


def test_a_superuser_finds_who_raised_a_teams_card_quota_in_the_history_list(superuser, db):
    team = Group.objects.create(name="vision")
    quota = CardQuota.objects.create(group=team, max_cards=8)
    dave = User.objects.create_superuser("dave", "dave@example.com", "dave-password")
    raise_quota(client_for(dave), quota, max_cards=64)
    auditor = client_for(superuser)
    auditor.cookies["django_language"] = "en"

    listed = auditor.get(HISTORY, {"q": "vision"})

    assert listed.status_code == 200
    page = listed.content.decode()
    assert "dave" in page and "Changed At most N cards." in page
    entry = LogEntry.objects.get(user=dave)
    assert entry.action_flag == CHANGE and entry.object_id == str(quota.pk)
    auditor.cookies["django_language"] = "zh-hans"
    in_chinese = auditor.get(HISTORY, {"q": "vision"}).content.decode()
    assert "变更内容" in in_chinese and "dave" in in_chinese


def test_the_history_list_filters_by_user_and_by_date(superuser, db):
    team = Group.objects.create(name="vision")
    quota = CardQuota.objects.create(group=team, max_cards=8)
    dave = User.objects.create_superuser("dave", "dave@example.com", "dave-password")
    erin = User.objects.create_superuser("erin", "erin@example.com", "erin-password")
    raise_quota(client_for(dave), quota, max_cards=64)
    raise_quota(client_for(erin), quota, max_cards=16)
    auditor = client_for(superuser)

    by_dave = auditor.get(HISTORY, {"user__id__exact": dave.pk})
    today = LogEntry.objects.get(user=dave).action_time
    by_day = auditor.get(
        HISTORY,
        {
            "action_time__year": today.year,
            "action_time__month": today.month,
            "action_time__day": today.day,
        },
    )

    assert by_dave.status_code == 200 and by_day.status_code == 200
    assert list(by_dave.context["cl"].result_list) == [LogEntry.objects.get(user=dave)]
    assert len(by_day.context["cl"].result_list) == 2


def test_no_one_edits_or_deletes_an_entry_of_the_history_not_even_a_superuser(superuser, db):
    team = Group.objects.create(name="vision")
    quota = CardQuota.objects.create(group=team, max_cards=8)
    raise_quota(client_for(superuser), quota, max_cards=64)
    entry = LogEntry.objects.get()
    client = client_for(superuser)

    shown = client.get(f"{HISTORY}{entry.pk}/change/")
    posted = client.post(f"{HISTORY}{entry.pk}/change/", {"change_message": "nothing"})
    deleted = client.post(f"{HISTORY}{entry.pk}/delete/", {"post": "yes"})
    added = client.get(f"{HISTORY}add/")
    bulk = client.post(
        HISTORY, {"action": "delete_selected", "_selected_action": [entry.pk], "post": "yes"}
    )

    assert shown.status_code == 200 and "Save" not in shown.content.decode()
    assert posted.status_code == 403
    assert deleted.status_code == 403
    assert added.status_code == 403
    assert bulk.status_code in (200, 302)
    entry.refresh_from_db()
    assert entry.change_message != "nothing"
    assert LogEntry.objects.filter(pk=entry.pk).exists()


def test_staff_see_the_history_list_only_with_its_view_permission(reviewer, db):
    team = Group.objects.create(name="vision")
    quota = CardQuota.objects.create(group=team, max_cards=8)
    dave = User.objects.create_superuser("dave", "dave@example.com", "dave-password")
    raise_quota(client_for(dave), quota, max_cards=64)
    client = client_for(reviewer)

    refused = client.get(HISTORY)
    reviewer.user_permissions.add(Permission.objects.get(codename="view_logentry"))
    allowed = client_for(User.objects.get(pk=reviewer.pk)).get(HISTORY)

    assert refused.status_code == 403
    assert allowed.status_code == 200
    assert "dave" in allowed.content.decode()
