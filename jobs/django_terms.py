"""Django's own words that the console says otherwise in Chinese.

The console's catalogue (LOCALE_PATHS) is read before Django's, so a msgid it translates is
said its way everywhere, Django's admin included. makemessages keeps only the msgids it finds
in the console's sources: the ones below are marked here so that they stay in the catalogue.

A user group (django.contrib.auth's Group) is 用户组, not Django's 组: the console already said
用户组 for "group" (the quotas, the usage report's "By group"), and a bare 组 is what its queue
groups say (组内任务总数, 任务组), so the admin showed 用户组 on a group's own pages and 组 in
its index and on a user's page for the same thing.

The console says 您 to its user; Django's Chinese says 你 in what the log-in and password
pages show of its own (the old password refused, the password validators' rules and
refusals), so those pages spoke both ways (QA).

The admin index's table headers, read by a screen reader alone, are Django's 型号名称 / 增加连接 /
更改或查看清单连接 ("Model name", "Add link", "Change or view list link"): a 型号 is a product
model and a 连接 a connection, machine-like Chinese; the console says 名称 / 新增 / 修改或查看列表.
"""

from __future__ import annotations

from django.utils.translation import gettext_noop

from .texts import ngettext_noop

DJANGO_TERMS = (
    # Group's verbose_name_plural: the admin's index, breadcrumbs and user page.
    gettext_noop("groups"),
    # User.groups' help text, on a user's page.
    gettext_noop(
        "The groups this user belongs to. A user will get all permissions granted to each of "
        "their groups."
    ),
    # The admin index's screen-reader-only column headers (admin/app_list.html).
    gettext_noop("Model name"),
    gettext_noop("Add link"),
    gettext_noop("Change or view list link"),
)

# Django's words on the password page (django.contrib.auth: the form's refusal and the
# validators' help texts and refusals), said with 您 as the console's own.
YOU_TERMS = (
    gettext_noop("Your old password was entered incorrectly. Please enter it again."),
    ngettext_noop(
        "Your password must contain at least %(min_length)d character.",
        "Your password must contain at least %(min_length)d characters.",
    ),
    gettext_noop("Your password can’t be too similar to your other personal information."),
    gettext_noop("Your password can’t be a commonly used password."),
    gettext_noop("Your password can’t be entirely numeric."),
)
