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

The rest of the admin's own words that read wrong in Chinese (ADMIN_TERMS, fix90a): a list
filter's title "以 状态" (by, as in "by means of") is 按状态; 动作 (a movement) for an
action is 操作, as Chinese consoles say, and its Go button 执行; "None available" 无可选的
is 暂无; a password hash's "parallelism" was 对比 (comparison); the delete and save pages
said 你 and 帐号 where the console says 您 and 账号, put spaces between Chinese words around
the model's name and an ASCII colon or quotes in Chinese. What Django says well is left.
Messages with a model's name in the middle of Chinese words ("Change %s", 修改 %s) keep
Django's spaces: the API keys' name starts with a Latin word, which a space sets apart.
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
    # The validators' refusals: Django's 密码跟 用户名 太相似了 (colloquial, spaces around
    # the attribute's name) and 这个密码太常见了 read as chat, not as a console's message (qa113).
    gettext_noop("The password is too similar to the %(verbose_name)s."),
    gettext_noop("This password is too common."),
    gettext_noop("This password is entirely numeric."),
)

# Django's admin (django.contrib.admin and auth), said as a Chinese console says it (above).
ADMIN_TERMS = (
    gettext_noop(" By %(filter_title)s "),
    gettext_noop("Recent actions"),
    gettext_noop("My actions"),
    gettext_noop("None available"),
    gettext_noop("Action:"),
    gettext_noop("Run"),
    gettext_noop("action flag"),
    gettext_noop("Remove from sorting"),
    gettext_noop("Change history: %s"),
    gettext_noop("Delete selected %(verbose_name_plural)s"),
    gettext_noop("Successfully deleted %(count)d %(items)s."),
    gettext_noop("Add another %(verbose_name)s"),
    gettext_noop("You may edit it again below."),
    gettext_noop("The {name} “{obj}” was added successfully."),
    gettext_noop("The {name} “{obj}” was changed successfully."),
    gettext_noop("The {name} “{obj}” was added successfully. You may add another {name} below."),
    gettext_noop("The {name} “{obj}” was changed successfully. You may edit it again below."),
    gettext_noop("The {name} “{obj}” was changed successfully. You may add another {name} below."),
    gettext_noop("You don’t have permission to view or edit anything."),
    gettext_noop("After you’ve created a user, you’ll be able to edit more user options."),
    gettext_noop(
        "Are you sure you want to delete the %(object_name)s “%(escaped_object)s”? All of the "
        "following related items will be deleted:"
    ),
    gettext_noop(
        "Deleting the %(object_name)s “%(escaped_object)s” would result in deleting related "
        "objects, but your account doesn't have permission to delete the following types of "
        "objects:"
    ),
    gettext_noop(
        "Deleting the %(object_name)s “%(escaped_object)s” would require deleting the following "
        "protected related objects:"
    ),
    gettext_noop(
        "Are you sure you want to delete the selected %(objects_name)s? All of the following "
        "objects and their related items will be deleted:"
    ),
    gettext_noop(
        "Deleting the selected %(objects_name)s would result in deleting related objects, but "
        "your account doesn't have permission to delete the following types of objects:"
    ),
    gettext_noop(
        "Deleting the selected %(objects_name)s would require deleting the following protected "
        "related objects:"
    ),
    # A user's page: the active box's help, and a password hash's parameters.
    gettext_noop(
        "Designates whether this user should be treated as active. Unselect this instead of "
        "deleting accounts."
    ),
    gettext_noop("variety"),
    gettext_noop("memory cost"),
    gettext_noop("time cost"),
    gettext_noop("parallelism"),
)

# The admin's history (LogEntry) stores a change's fields by their form labels in English
# (Django writes the message under translation.override(None)) and says them in the reader's
# language by looking each label up as it is: the model field's verbose_name capitalised,
# "At most N cards", which no catalogue had (only "at most N cards"), so a Chinese history
# read "已修改 At most N cards。" (qa98). Each label of a field the admin's forms change,
# capitalised, for the console's models and Django's user (tests/test_django_terms.py checks
# that none is missing).
ADMIN_FIELD_LABELS = (
    gettext_noop("Owner"),
    gettext_noop("Spec"),
    gettext_noop("Status reason"),
    gettext_noop("External ID"),
    gettext_noop("Reviewed by"),
    gettext_noop("Reviewed"),
    gettext_noop("Finished"),
    gettext_noop("More than N cards"),
    gettext_noop("Reviewers may approve their own jobs"),
    gettext_noop("Updated by"),
    gettext_noop("Group"),
    gettext_noop("At most N cards"),
    gettext_noop("At most M running jobs"),
    gettext_noop("Last login"),
    gettext_noop("Superuser status"),
    gettext_noop("First name"),
    gettext_noop("Last name"),
    gettext_noop("Staff status"),
    gettext_noop("Date joined"),
    gettext_noop("Groups"),
    gettext_noop("User permissions"),
)
