"""One form per wizard step (plus the row forms of its tables).

Fields the canonical spec validates (name, image, ranges, paths...) are not `required` here:
`jobs.wizard` runs the spec's rules and puts each message on the field it concerns, so a
rule is written once. These forms only parse what was typed and check what the spec cannot
know (choices offered by the chosen pool, a card type picked when accelerators are on).
"""

from __future__ import annotations

import unicodedata
from typing import Any

from crispy_forms.helper import FormHelper
from crispy_forms.layout import Div, Field, Layout
from django import forms
from django.forms import formset_factory
from django.utils.functional import cached_property
from django.utils.html import format_html
from django.utils.translation import gettext_lazy as _
from django.utils.translation import gettext_noop, ngettext, pgettext_lazy

from . import spec as S
from .alerts import mail_printed_only
from .backends import Pool, Volume
from .logs import MAX_TAIL_BYTES
from .models import Priority
from .texts import list_words
from .volume_access import not_offered_message

# Messages of Django and django-tasks-db that their Chinese catalogs word badly or lack; the
# project's catalog (first in LOCALE_PATHS) gives them: a NUL in a text field ("不允许是用
# 空字符串" reads as "no empty string"), the admin's blank choice, the task results list.
gettext_noop("Null characters are not allowed.")
gettext_noop("- Select an option -")
gettext_noop("Task Results")
gettext_noop("Task Result")  # its permissions on a user's and a group's page

PRIORITY_CHOICES = Priority.choices
FRAMEWORK_CHOICES = list(S.FRAMEWORK_LABELS.items())
CREATION_CHOICES = [
    # Seed 000's own words (自定义创建), as its twin reads 基于AIAK加速模版创建.
    (S.CREATION_CUSTOM, _("Custom creation")),
    (S.CREATION_AIAK, _("From an AIAK acceleration template")),
]
TRAINING_MODE_CHOICES = [("", "—"), ("Post-Pretrain", "Post-Pretrain"), ("SFT", "SFT")]
TRAINING_METHOD_CHOICES = [("", "—"), ("full", _("Full update")), ("lora", "LoRA")]
STORAGE_LABELS = {
    # Seed 000's 本地盘: the type code, hostpath, shows only where the API value matters (the
    # review's request), as PFS's pfs does (qa113).
    "hostpath": _("Local disk"),
    "pfs": "PFS",
    "pfsl1": "PFS L1",
    "pfsl2": "PFS L2",
    "nas": "NAS",
    "bos": "BOS",
    "cfs": "CFS",
    "rapidfs": "RapidFS",
    "dataset": _("Dataset"),
}
ACCESS_CHOICES = [("rw", _("Read-write")), ("ro", _("Read-only"))]
ALERT_CHOICES = [
    ("jobRunning", _("Job starts running")),
    ("jobFailed", _("Job fails")),
    ("jobSucceed", _("Job succeeds")),
    ("jobHang", _("Job hangs")),
    ("jobFT", _("Job restarted by fault tolerance")),
    ("nodeFT", _("A node of the job fails")),
]
# The alert events' help, by the pool's backend: who sends the alerts differs (the console on
# the local pool; AIHC itself, from the request's alertConfig, on an AIHC pool, whose check
# refuses emails and webhooks; the console on a Kubernetes pool, from what its sync reads).
# Seed 000 lists SMS, email, WeChat, Feishu and custom webhooks: the console sends
# email and webhooks, chat bots among them; SMS needs a gateway it does not have.
ALERT_HELP = {
    "local": _(
        "The console sends them by email and webhook (Feishu/Lark, WeCom, DingTalk or "
        "Slack group bots, or a URL of your own). It sends no SMS itself: use a webhook "
        "of a service that does, or on an AIHC pool a notify policy with SMS. “Job hangs” "
        "needs hang detection, on step 5 (Fault tolerance & diagnostics). “Job restarted by "
        "fault tolerance” comes only when fault tolerance (the same step; PyTorch jobs only) "
        "restarts the job."
    ),
    "aihc": _(
        "AIHC sends them itself, through the notify policy given below (by email, SMS, "
        "phone, DingTalk, WeCom or Feishu, as the policy says); the console sends no email "
        "or webhook for a job on this pool. “Job hangs” needs hang detection, on step 5 "
        "(Fault tolerance & diagnostics). “Job restarted by fault tolerance” comes only when fault "
        "tolerance (the same step; PyTorch jobs only) restarts the job."
    ),
    "kubernetes": _(
        "The console sends them by email and webhook (Feishu/Lark, WeCom, DingTalk or "
        "Slack group bots, or a URL of your own), from what it reads of the job in the "
        "cluster. “Job restarted by fault tolerance” comes only when fault tolerance (step 5, "
        "Fault tolerance & diagnostics; PyTorch jobs only) restarts the job. “Job hangs” and "
        "“A node of the job fails” never come from this pool: the console detects no hang "
        "and watches no node here."
    ),
}
RETENTION_UNITS = [("m", _("minutes")), ("h", _("hours")), ("d", _("days"))]
SUBMISSION_CHOICES = [
    (S.SUBMIT_STANDALONE, _("Standalone job")),
    (S.SUBMIT_QUEUE, _("Queue task")),
]
MAX_ROWS = S.MAX_ENVS  # rows of each table; the spec allows no more (envs, mounts)
# A lean copy of crispy-bootstrap5's field template (see the template for why).
FIELD_TEMPLATE = "jobs/wizard/field.html"
# Found by the form renderer in this app's templates/ folder.
LEAN_SELECT_TEMPLATE = "jobs/widgets/select.html"
LEAN_INPUT_TEMPLATE = "jobs/widgets/input.html"
# Django's widget templates, drawn leaner with the same markup: a text input is text.html,
# which includes input.html, which includes attrs.html (three templates and a loop of three
# tags per attribute); ours is one template and a filter. Exact classes only: a subclass may
# have a template of its own (VolumeSelect).
LEAN_WIDGET_TEMPLATES: dict[type[forms.Widget], str] = {
    forms.TextInput: LEAN_INPUT_TEMPLATE,
    forms.NumberInput: LEAN_INPUT_TEMPLATE,
    forms.PasswordInput: LEAN_INPUT_TEMPLATE,
    forms.HiddenInput: LEAN_INPUT_TEMPLATE,
    forms.CheckboxInput: LEAN_INPUT_TEMPLATE,
    forms.Textarea: "jobs/widgets/textarea.html",
    forms.Select: LEAN_SELECT_TEMPLATE,
}


class WizardField(Field):
    """A crispy layout field drawn with FIELD_TEMPLATE (crispy's Field ignores the helper's
    field_template)."""

    template = FIELD_TEMPLATE


def help_anchored(form: forms.BaseForm, **anchors: str) -> None:
    """Each named field's help ends with a link to that anchor of the help page
    (templates/jobs/help.html; FIELD_TEMPLATE draws it): the settings whose effect takes more
    than a line to say (qa113: seed 000 says "详见…" beside them, and the console had no help)."""
    for name, anchor in anchors.items():
        form.fields[name].help_anchor = anchor  # type: ignore[attr-defined]


def _helper(*fields: Any, show_errors: bool = True) -> FormHelper:
    helper = FormHelper()
    helper.form_tag = False
    helper.disable_csrf = True
    helper.template = "jobs/wizard/_crispy_fields.html"
    helper.form_show_errors = show_errors
    helper.field_template = FIELD_TEMPLATE
    helper.layout = Layout(*fields)
    return helper


def _lean_widgets(form: forms.BaseForm) -> None:
    """The form's widgets drawn through LEAN_WIDGET_TEMPLATES. Plain selects also render
    their options inline: Django renders a template per option, which made the 40-entry AIAK
    template list the most expensive part of its partial."""
    for field in form.fields.values():
        lean = LEAN_WIDGET_TEMPLATES.get(type(field.widget))
        if lean is not None:
            field.widget.template_name = lean


# What a phone's keyboard does to a field typed to the letter: every text field of the wizard
# holds one (a name, an image, a path, a command, a variable, a label, an address; the wizard
# has no free prose), and a keyboard that capitalised its first letter or "corrected" a word
# (qa85: Python:3.12, /Workspace) made a value that the rules refuse or, worse, take.
PLAIN_TYPED = {"autocapitalize": "none", "autocorrect": "off", "spellcheck": "false"}


def _phone_keyboards(form: forms.BaseForm) -> None:
    """The keyboard a phone opens for each field: plain typing (PLAIN_TYPED) for text, and
    digits for numbers. An attribute a field sets itself (inputmode="email") wins."""
    for field in form.fields.values():
        widget = field.widget
        if isinstance(widget, forms.NumberInput):
            # Digits alone for a whole number (a phone otherwise opens its full keyboard on
            # a type="number" box), with the decimal point for a fraction (Django's
            # FloatField and DecimalField are IntegerFields too).
            fraction = isinstance(field, (forms.FloatField, forms.DecimalField))
            widget.attrs.setdefault("inputmode", "decimal" if fraction else "numeric")
        elif isinstance(widget, (forms.TextInput, forms.Textarea, forms.PasswordInput)):
            for name, value in PLAIN_TYPED.items():
                widget.attrs.setdefault(name, value)


class LeanFormSet(forms.BaseFormSet):
    """A formset whose management form (four hidden inputs) is drawn with lean widgets too."""

    @cached_property
    def management_form(self) -> forms.Form:
        form = super().management_form
        _lean_widgets(form)
        return form


def _styled(form: forms.BaseForm) -> None:
    """Bootstrap classes and accessible names for fields rendered by hand in the row tables
    (the column header names a cell for the eye; aria-label names it for a screen reader)."""
    _lean_widgets(form)
    _phone_keyboards(form)
    row = (form.prefix or "").rsplit("-", 1)[-1]
    for field in form.fields.values():
        widget = field.widget
        if not isinstance(widget, forms.HiddenInput):
            widget.attrs["aria-label"] = (
                f"{field.label} {int(row) + 1}" if row.isdigit() else str(field.label)
            )
        if isinstance(widget, forms.CheckboxInput):
            widget.attrs.setdefault("class", "form-check-input")
        elif isinstance(widget, forms.Select):
            widget.attrs.setdefault("class", "form-select form-select-sm")
        elif not isinstance(widget, forms.HiddenInput):
            widget.attrs.setdefault("class", "form-control form-control-sm")


class StepForm(forms.Form):
    """A wizard step's form; `show_errors` is off while the step has not been tried yet."""

    def __init__(self, *args: Any, show_errors: bool = True, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.show_errors = show_errors
        _lean_widgets(self)
        _phone_keyboards(self)


def _mark_required(form: forms.Form, *names: str) -> None:
    """Fields required only sometimes (and then checked by the form's clean or the spec):
    marked required, for the eye (*) and for a screen reader. Each is shown only when it is
    required (AIAK mode, a switch that is on), so the mark is true wherever it is seen."""
    for name in names:
        form.fields[name].marked_required = True  # type: ignore[attr-defined]
        form.fields[name].widget.attrs["aria-required"] = "true"


class BasicForm(StepForm):
    name = forms.CharField(
        label=_("Job name"),
        error_messages={"required": _("Enter a job name.")},
        help_text=_(
            "Lowercase letters, digits and '-'; starts with a lowercase letter, ends with a "
            "lowercase letter or digit; 1-50 characters."
        ),
    )
    # The two helps follow seed 000's (选择任务部署的百舸资源池 / …资源池下的队列), with the
    # console's kinds of pool in place of 百舸's alone (qa109: both had none).
    resource_pool = forms.ChoiceField(
        label=_("Resource pool"),
        help_text=_(
            "The resource pool the job is deployed to: the local pool runs it on this "
            "machine's cards, a Kubernetes pool on its cluster's nodes, an AIHC pool on Baidu "
            "AIHC."
        ),
        # A copy of a job in a pool no longer offered lands here too: say which pool, by the
        # id the draft holds (its last known name would cost a query on every page binding it).
        error_messages={
            "invalid_choice": _(
                "Resource pool “%(value)s” is not offered (or no longer offered); choose one "
                "from the list."
            )
        },
    )
    queue = forms.ChoiceField(
        label=_("Queue"),
        help_text=_(
            "The queue of the resource pool the job is deployed in; the list follows the pool "
            "chosen."
        ),
    )
    priority = forms.ChoiceField(label=_("Priority"), choices=PRIORITY_CHOICES)
    framework = forms.ChoiceField(
        label=_("Training framework"),
        choices=FRAMEWORK_CHOICES,
        widget=forms.RadioSelect,
        # Said before the change: the new framework's roles replace the table on 资源配置.
        help_text=_(
            "Changing it later gives the Resources step the new framework's roles; the table "
            "you had is kept and comes back when you choose its framework again."
        ),
    )
    log_persistence = forms.BooleanField(
        label=_("Log persistence"),
        required=False,
        # Seed 000's wording: logs kept in BLS, not "after it ends" (qa109: that said when they
        # are saved, which no pool of the console does). What each pool really does follows.
        help_text=_(
            "Turning it on keeps your job's logs in the log service (BLS); storing, reading, "
            "writing and indexing logs is billed. The local pool always writes a job's logs "
            "to disk as it runs and keeps them until the job is deleted, whether this is on "
            "or off; Kubernetes pools do not support it yet, and AIHC's OpenAPI has no such "
            "setting, so AIHC pools cannot take it."
        ),
    )
    creation_mode = forms.ChoiceField(
        label=_("Creation mode"), choices=CREATION_CHOICES, widget=forms.RadioSelect
    )
    training_mode = forms.ChoiceField(
        label=_("Training mode"), choices=TRAINING_MODE_CHOICES, required=False
    )
    training_method = forms.ChoiceField(
        label=_("Training method"),
        choices=TRAINING_METHOD_CHOICES,
        required=False,
        help_text=_(
            "Full update trains every parameter; LoRA keeps the pretrained weights and trains "
            "low-rank matrices only."
        ),
    )
    aiak_template = forms.ChoiceField(
        label=_("AIAK training template"),
        required=False,
        help_text=_(
            "Changing the template, training mode or method later fills the image and command, "
            "the environment variables and the resources afresh from the new template; the "
            "paths you put in the command and the variables you added are kept."
        ),
    )

    def __init__(
        self,
        *args: Any,
        pools: list[Pool],
        pool: Pool | None,
        templates: list[tuple[str, list[tuple[str, str]]]],
        unreachable: str | None = None,
        **kwargs: Any,
    ) -> None:
        from .pools import labels_by_pool  # jobs.pools imports this module

        super().__init__(*args, **kwargs)
        # By name, as the pools page and the job list name them; with the id when two share one.
        labels = labels_by_pool({p.id: p.name for p in pools})
        self.fields["resource_pool"].choices = list(labels.items())
        self.pool_unreachable = ""
        posted_pool = str(self.data.get("resource_pool") or "") if self.is_bound else ""
        if unreachable is not None and posted_pool and posted_pool not in labels:
            # A known pool whose platform cannot be read now (jobs.wizard.unreachable_pool)
            # stays chosen, said to be unreachable, instead of vanishing from the list as an
            # unknown pool would (qa102); the step goes on once its platform answers.
            self.fields["resource_pool"].choices = [
                *labels.items(),
                (posted_pool, _("%(pool)s (cannot be reached now)") % {"pool": posted_pool}),
            ]
            self.pool_unreachable = _(
                "Resource pool “%(pool)s” cannot be reached now: %(reason)s. What you filled "
                "in is kept; go on once it answers again (try in a moment)."
            ) % {"pool": posted_pool, "reason": unreachable}
        queues = pool.queues if pool else []
        self.fields["queue"].choices = [(q, q) for q in queues]
        if pool is None and self.is_bound:
            # No pool, so no queues to check the choice against: the pool's error says what
            # to fix, and the queue typed is kept as it was.
            posted = str(self.data.get("queue") or "")
            self.fields["queue"].choices = [(posted, posted)]
            self.fields["queue"].required = False
        _aiak_fields(self, templates)
        htmx_queue = {"hx-target": "#id_queue", "hx-trigger": "change", "hx-swap": "innerHTML"}
        self.fields["resource_pool"].widget.attrs.update(htmx_queue)
        self.helper = _helper(
            WizardField("name"),
            Div(
                WizardField("resource_pool", wrapper_class="col-md-6"),
                WizardField("queue", wrapper_class="col-md-6"),
                css_class="row",
            ),
            WizardField("priority"),
            WizardField("framework"),
            WizardField("log_persistence"),
            show_errors=self.show_errors,
        )

    def clean(self) -> dict[str, Any]:
        data = super().clean()
        if self.pool_unreachable:
            self.add_error("resource_pool", self.pool_unreachable)
        if (
            data.get("creation_mode") == S.CREATION_AIAK
            and data.get("framework")
            and data["framework"] != S.PYTORCH
        ):
            self.add_error("framework", _("AIAK templates run on PyTorch; choose PyTorch."))
        return data


AIAK_FIELDS = ("training_mode", "training_method", "aiak_template")


def _aiak_fields(form: forms.Form, templates: list[tuple[str, list[tuple[str, str]]]]) -> None:
    form.fields["aiak_template"].choices = [("", "—"), *templates]
    _mark_required(form, *AIAK_FIELDS)


class ImageForm(StepForm):
    image = forms.CharField(
        label=_("Image address"),
        required=False,
        max_length=600,
        help_text=_(
            "Type an image address, or pick a preset or recently used image. The pool's nodes "
            "must be able to pull it."
        ),
    )
    entrypoint = forms.CharField(
        label=_("Entrypoint"),
        required=False,
        max_length=256,
        help_text=_(
            "The container's ENTRYPOINT; bash by default. Change it if the image has no bash."
        ),
    )
    command = forms.CharField(
        label=_("Command"),
        required=False,
        max_length=300 * 1024,
        widget=forms.Textarea(attrs={"rows": 8, "class": "font-monospace", "spellcheck": "false"}),
        help_text=_(
            "The arguments (CMD), usually the real training command; several lines allowed."
        ),
    )
    registry_username = forms.CharField(
        label=_("Registry username"), required=False, max_length=256
    )
    registry_password = forms.CharField(
        label=_("Registry password"),
        required=False,
        max_length=1024,
        strip=False,  # a password is used exactly as typed
        # Never rendered back: a saved password comes back empty, and empty keeps it.
        widget=forms.PasswordInput(render_value=False, attrs={"autocomplete": "new-password"}),
        help_text=_(
            "For a private registry only. Once saved it is not shown again; leave it empty to keep it."
        ),
    )
    env_paste = forms.CharField(
        label=_("Paste variables"),
        required=False,
        max_length=100 * 1024,
        widget=forms.Textarea(
            attrs={"rows": 3, "class": "font-monospace", "placeholder": "KEY=VALUE"}
        ),
        help_text=_(
            "One KEY=VALUE per line, or a name and its value as two cells copied from a "
            "spreadsheet (Excel, WPS: an empty value cell is an empty value, a header row "
            "such as name, value is skipped); they are added to the rows above when you go on."
        ),
    )

    def __init__(self, *args: Any, locked_image: str = "", **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.locked_image = locked_image
        self.fields["image"].widget.attrs["list"] = "image-choices"
        # Required, but judged by the spec (with its own message) rather than by the form.
        _mark_required(self, "image")
        # A shell entrypoint (the default) needs a command to run, so it is marked the same
        # way; any other entrypoint may run with no arguments.
        entrypoint = self["entrypoint"].value()
        if (entrypoint if entrypoint is not None else "bash").strip() in S.SHELLS:
            _mark_required(self, "command")
        if locked_image:
            self.fields["image"].widget.attrs["readonly"] = True
            self.fields["image"].help_text = _(
                "The AIAK template's preset image; it cannot be changed."
            )
            # Seed 000's 执行命令 of an AIAK template: what must be replaced, said where
            # it is typed (the step refuses a command still holding those lines).
            self.fields["command"].help_text = _(
                "The AIAK template's default parameters: replace the PATHs of the data set, "
                "CHECKPOINT, TOKENIZER and TensorBoard (DATA_PATH, CHECKPOINT_LOAD_PATH, "
                "CHECKPOINT_SAVE_PATH, TOKENIZER_PATH, TENSORBOARD_PATH) with your own paths. "
                "To change the model's parameters too, edit them here."
            )
        self.helper = _helper(
            WizardField("image"), WizardField("entrypoint"), show_errors=self.show_errors
        )

    def clean_image(self) -> str:
        image = (self.cleaned_data.get("image") or "").strip()
        if self.locked_image and image != self.locked_image:
            raise forms.ValidationError(
                _(
                    "An AIAK template runs in its own image %(image)s. To use another image, "
                    "choose custom creation in Basic info."
                ),
                params={"image": self.locked_image},
            )
        return image


class EnvForm(forms.Form):
    name = forms.CharField(label=_("Name"), required=False, max_length=256)
    # Kept as typed: spaces at either end can be part of a value (a separator, a prompt).
    value = forms.CharField(label=_("Value"), required=False, max_length=40 * 1024, strip=False)
    secret = forms.BooleanField(label=_("Secret"), required=False)

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        _styled(self)

    def clean(self) -> dict[str, Any]:
        data = super().clean()
        if not data.get("name") and data.get("value") and "name" not in self.errors:
            self.add_error("name", _("Enter the variable's name."))
        elif (
            data.get("name")
            and not data.get("value")
            and self.data.get(self.add_prefix("secret_dropped"))
        ):
            # Its saved secret value was dropped when Secret was unticked (jobs.wizard
            # .restore_secrets): a stored secret is never shown back in plain text.
            self.add_error(
                "value",
                _(
                    "This value was saved as a secret and is not shown in plain text: unticking "
                    "Secret cleared it. Type the value again."
                ),
            )
        elif data.get("name") and data.get("secret") and not data.get("value"):
            # A saved secret is kept under its name only: renamed, it must be typed again.
            self.add_error("value", _("Enter the secret's value (a renamed secret is not kept)."))
        return data


class LabelForm(forms.Form):
    """A row of 基础信息's 标签 table. The rules (syntax, reserved keys, one value per key)
    are the spec's (jobs.spec.validate), put on this row's fields by the wizard, so the API
    and an import are judged by the same words."""

    # Longer than the rule allows (a key of 317, a value of 63), so a little too long gets the
    # rule's words, not only a count; far longer is the form's to refuse.
    key = forms.CharField(label=_("Key"), required=False, max_length=1024)
    value = forms.CharField(label=_("Value"), required=False, max_length=1024)

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        _styled(self)


class ResourcesForm(StepForm):
    shared_memory_gi = forms.IntegerField(
        label=_("Shared memory (GiB)"),
        required=False,  # optional in both consoles: empty means the default, 10Gi
        widget=forms.NumberInput(attrs={"placeholder": "10"}),
        # Not Django's "输入整数。" (qa108: 0.5 was refused without saying in what unit).
        error_messages={"invalid": _("Shared memory must be a whole number of GiB.")},
        help_text=_(
            "Size of /dev/shm, used by processes on one node to exchange data; 10 GiB by default."
        ),
    )
    enable_rdma = forms.BooleanField(
        label=_("RDMA"),
        required=False,
        help_text=_(
            "Schedules the job on RDMA nodes and sets NCCL_IB_DISABLE=0. On AIHC it also gives "
            "the containers 10 GiB of shared memory; a size other than 10 GiB above is sent too. "
            "The local pool runs every job on this machine and schedules nothing: there RDMA "
            "only sets NCCL_IB_DISABLE=0."
        ),
    )

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.helper = _helper(
            Div(
                WizardField("shared_memory_gi", wrapper_class="col-md-4"),
                WizardField("enable_rdma", wrapper_class="col-md-8 pt-md-4"),
                css_class="row",
            ),
            show_errors=self.show_errors,
        )


class RoleForm(forms.Form):
    name = forms.CharField(label=_("Role"), required=False, max_length=64)
    # Context: the job page's "Replicas" heads its list of replicas (实例), this counts them (实例数).
    replicas = forms.IntegerField(label=pgettext_lazy("how many replicas a role runs", "Replicas"))
    use_accelerator = forms.BooleanField(label=_("Use cards"), required=False)
    accelerator_type = forms.ChoiceField(label=_("Card type"), required=False)
    accelerators = forms.IntegerField(label=_("Cards per replica"), required=False)
    cpu = forms.IntegerField(label=_("CPU cores"), required=False)
    memory_gb = forms.IntegerField(label=_("Memory (GiB)"), required=False)

    def __init__(self, *args: Any, card_types: list[str], fixed_names: bool, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        # The resource name alone (qa113 asked for "A800 80GB (…)" here too, but a select that
        # wide cuts the role table short at 1024 pixels; the pool line under it names each).
        self.fields["accelerator_type"].choices = [("", "—"), *[(t, t) for t in card_types]]
        self.card_types = card_types
        self.pool_has_cards = bool(card_types)
        # A card type the pool lacks (an imported request's nvidia.com/gpu on the local pool)
        # stays in the box and is refused in the console's words in clean (qa101): as a choice
        # missing from the list it was drawn as "—" under Django's "Select a valid choice".
        self.card_not_offered = ""
        if self.is_bound:
            sent = str(self.data.get(self.add_prefix("accelerator_type")) or "").strip()
            if sent and sent not in card_types:
                self.card_not_offered = sent
                self.fields["accelerator_type"].choices = [
                    *self.fields["accelerator_type"].choices,
                    (sent, sent),
                ]
        if fixed_names:
            self.fields["name"].widget = forms.HiddenInput()
        self.fields["cpu"].widget.attrs["placeholder"] = _("unlimited")
        self.fields["memory_gb"].widget.attrs["placeholder"] = _("unlimited")
        _styled(self)
        # A row's inputs are named by its role, "master 实例数": by the row's number alone
        # ("实例数 1", "实例数 2") a screen reader did not say whose instances they were (qa64).
        # A custom row not named yet keeps its number.
        role = str(
            (self.data.get(self.add_prefix("name")) if self.is_bound else self.initial.get("name"))
            or ""
        ).strip()
        if role:
            for name, field in self.fields.items():
                if name != "name" and not isinstance(field.widget, forms.HiddenInput):
                    field.widget.attrs["aria-label"] = f"{role} {field.label}"

    def clean(self) -> dict[str, Any]:
        data = super().clean()
        # A CPU-only row hides its card type and count (console.css) and ignores them.
        _ignore_when_off(self, data, "use_accelerator", "accelerator_type", "accelerators")
        if data.get("use_accelerator"):
            if not data.get("accelerator_type") and "accelerator_type" not in self.errors:
                # A pool of none: 卡型 offers only "—", and "Choose a card type." did not say
                # there was nothing to choose (qa93). The pools page's words.
                self.add_error(
                    "accelerator_type",
                    _("Choose a card type.")
                    if self.pool_has_cards
                    else _("This pool offers no cards: its jobs run on CPUs."),
                )
            elif (
                self.card_not_offered
                and data.get("accelerator_type") == self.card_not_offered
                and "accelerator_type" not in self.errors
            ):
                self.add_error("accelerator_type", self._card_not_offered_message())
            if data.get("accelerators") is None and "accelerators" not in self.errors:
                self.add_error("accelerators", _("Enter the cards per replica."))
        return data

    def _card_not_offered_message(self) -> str:
        if not self.pool_has_cards:
            return _("This pool offers no cards: its jobs run on CPUs.")
        return _("This pool does not offer “%(type)s” cards; it offers %(types)s.") % {
            "type": self.card_not_offered,
            "types": list_words(S.card_shown(t) for t in self.card_types),
        }


class DataForm(StepForm):
    storage_enabled = forms.BooleanField(
        label=_("Storage"),
        required=False,
        help_text=_(
            "Mounts storage for code, data, checkpoints and logs. Turn it off to mount none."
        ),
    )

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        help_anchored(self, storage_enabled="storage")
        self.helper = _helper(WizardField("storage_enabled"), show_errors=self.show_errors)


# A mount row's volume list names a volume in at most this many columns (a Chinese character
# counts two): a local folder's path or a long file system name was cut at the select's edge,
# "scratch (/mnt/team-a/projects/llm-pret", so two folders of one parent read the same. 24 is
# what the select shows whole at its narrowest (192 pixels, on a tablet; console.css).
VOLUME_LABEL_WIDTH = 24
VOLUME_SELECT_TEMPLATE = "jobs/widgets/volume_select.html"


def _columns(char: str) -> int:
    return 2 if unicodedata.east_asian_width(char) in "WF" else 1


def _width(text: str) -> int:
    return sum(_columns(c) for c in text)


def middle_shortened(text: str, width: int = VOLUME_LABEL_WIDTH) -> str:
    """`text` with its middle replaced by … when it is wider than `width` columns: its start
    (a volume's name) and its end (the last folders, what tells two paths apart, which get
    the larger share) stay."""
    if _width(text) <= width:
        return text
    budget = width - 1
    head, used = "", 0
    for char in text:
        if used + _columns(char) > budget * 2 // 5:
            break
        head, used = head + char, used + _columns(char)
    tail = ""
    for char in reversed(text):
        if used + _columns(char) > budget:
            break
        tail, used = char + tail, used + _columns(char)
    return f"{head}…{tail}"


class VolumeSelect(forms.Select):
    """A mount row's volume list: an option whose text is shortened (middle_shortened) carries
    the whole in its title, and the select names where the chosen one is written out in full
    (console.js)."""

    template_name = VOLUME_SELECT_TEMPLATE

    def __init__(self, *args: Any, full_labels: dict[str, str] | None = None, **kwargs: Any):
        super().__init__(*args, **kwargs)
        self.full_labels = full_labels or {}

    def create_option(self, name: str, value: Any, *args: Any, **kwargs: Any) -> dict[str, Any]:
        option = super().create_option(name, value, *args, **kwargs)
        full = self.full_labels.get(str(value), "")
        if full and full != option["label"]:
            option["attrs"]["title"] = full
        return option


def _volume_label(volume: Volume, *, with_type: bool, width: int = 0) -> str:
    """A volume as a mount row's select names it: its name, then its type when asked, and
    its administrator's label (a local volume's folder). With a `width`, its long parts are
    shortened in the middle to about that many columns: the label (the path) when the rest
    leaves room for 8 columns of it; the whole when the name alone is wider. The type's own
    label is short and stays whole."""
    kind = [str(STORAGE_LABELS.get(volume.type, volume.type))] if with_type else []
    parts = [*kind, volume.label] if volume.label else kind
    whole = f"{volume.name} ({', '.join(parts)})" if parts else volume.name
    if not width:
        return whole
    if _width(volume.name) > width - 8:
        return middle_shortened(whole, width)
    if volume.label:
        rest = _width(whole) - _width(volume.label)
        if width - rest >= 8:
            label = middle_shortened(volume.label, width - rest)
            return f"{volume.name} ({', '.join([*kind, label])})"
    return whole


# The help paragraph of the data step (_data.html) that says what a storage type's source
# path is, by the type (beside "mount-help", which every row's paths point at).
SOURCE_PATH_HELP = {"hostpath": "node-disk-help", "bos": "bos-help"}


def node_disk(pool: Pool | None, storage_type: str) -> bool:
    """A hostpath mount on a pool with no hostpath volumes to choose (AIHC): the node's
    local disk, named by the console (hostpath-1, hostpath-2, ... as AIHC's samples name
    it; uncertain whether AIHC reads the name at all, so unique names are the safe choice).
    Never on the local pool, which mounts only its volumes: one that offers a user none
    (jobs.volume_access) has no node disk to fall back on."""
    return (
        storage_type == "hostpath"
        and pool is not None
        and pool.backend != "local"
        and "hostpath" in pool.storage_types
        and not any(v.type == "hostpath" for v in pool.volumes)
    )


def source_path_help(pool: Pool | None, storage_type: str) -> list[str]:
    """The ids of the help a row's source path is described by: only help the step draws
    (_data.html: the local disk's only where the pool has a node's disk, BOS's only where it
    mounts BOS). qa93: the local pool's rows named node-disk-help, which it never draws."""
    drawn = {
        "hostpath": node_disk(pool, "hostpath"),
        "bos": pool is not None and "bos" in pool.storage_types,
    }
    own = SOURCE_PATH_HELP.get(storage_type)
    return ["mount-help", own] if own and drawn[storage_type] else ["mount-help"]


class MountForm(forms.Form):
    """A mount row. Its volume follows its storage type: only that type's volumes are
    offered, and a volume of another type (the row's type switched without JavaScript, which
    would have redrawn the row) is replaced by the type's only volume, or none, and said so."""

    type = forms.ChoiceField(label=_("Storage type"))
    name = forms.ChoiceField(label=_("File system / volume"), required=False)
    source_path = forms.CharField(label=_("Source path"), required=False, max_length=1024)
    mount_path = forms.CharField(
        label=_("Mount path in the container"), required=False, max_length=1024
    )
    access = forms.ChoiceField(label=_("Access"), choices=ACCESS_CHOICES)
    refitted: Volume | None = None  # the volume of another type this row was sent with
    access_reason = ""  # why the access is fixed (a volume read-only for everyone)
    forced_read_only = ""  # the read-only volume this row was sent with read-write

    def __init__(self, *args: Any, pool: Pool | None, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        types = pool.storage_types if pool else []
        self.fields["type"].choices = [(t, STORAGE_LABELS.get(t, t)) for t in types]
        volumes = {v.name: v for v in (pool.volumes if pool else [])}
        chosen = self.chosen_type()
        if types and chosen not in types:
            # A type the pool does not mount (seed 001's PFS imported to the local pool) says
            # which it mounts; qa72: Django's "Select a valid choice" named neither.
            self.fields["type"].error_messages["invalid_choice"] = (
                _("This pool cannot mount “%(type)s” storage; it mounts %(types)s.")
                % {
                    "type": STORAGE_LABELS.get(chosen, chosen),
                    "types": list_words(str(STORAGE_LABELS.get(t, t)) for t in types),
                }
            ).replace("%", "%%")
        if pool is not None and chosen in types:
            offered = pool.volumes_of(chosen)
            name = str(self.data.get(self.add_prefix("name")) or "") if self.is_bound else ""
            wrong = volumes.get(name)
            if wrong is not None and wrong.type != chosen:
                self.data = self.data.copy()
                self.data[self.add_prefix("name")] = pool.volume_for(chosen, name)
                self.refitted = wrong
        else:
            offered = list(volumes.values())  # the type has its own message; no guess
        # The row's storage type is chosen beside this select, and only its volumes are
        # offered: each is named with its own label alone ("scratch", not "scratch (Local disk
        # (hostpath))", which a select of usual width cuts short). Without a known type every
        # volume is offered, so each says its type.
        typed = pool is None or chosen not in types
        full = {v.name: _volume_label(v, with_type=typed) for v in offered}
        shown = {
            v.name: _volume_label(v, with_type=typed, width=VOLUME_LABEL_WIDTH) for v in offered
        }
        # A long name or path is shortened in the middle in the list, whole in the option's
        # title and under the select once chosen (volume_full); the value sent is the name.
        self.fields["name"].widget = VolumeSelect(full_labels=full)
        self.fields["name"].choices = [("", "—"), *shown.items()]
        value = str(
            (self.data.get(self.add_prefix("name")) if self.is_bound else self.initial.get("name"))
            or ""
        )
        self.volume_full = full[value] if value in full and full[value] != shown[value] else ""
        if pool is not None and pool.backend == "local" and value and value not in full:
            # A volume the user may not mount (or that does not exist: the same words) is
            # refused in the words every other door uses (jobs.volume_access).
            self.fields["name"].error_messages["invalid_choice"] = not_offered_message(
                value
            ).replace("%", "%%")
        self.fields["name"].widget.attrs["data-volume-full"] = f"{self['name'].auto_id}_full"
        # Volumes read-only for everyone (LOCAL_VOLUMES ":ro"): the row's access is 只读 and
        # says why; a row sent read-write (no JavaScript, an old draft) is set to read-only
        # and told so (clean), as a row refitted to its type is.
        self.read_only_volumes = {v.name for v in offered if v.read_only}
        if value in self.read_only_volumes:
            self.fields["access"].choices = [c for c in ACCESS_CHOICES if c[0] == "ro"]
            self.access_reason = _(
                "Volume %(volume)s is read-only for everyone (set by the administrator)."
            ) % {"volume": value}
            self.fields["access"].widget.attrs["aria-describedby"] = (
                f"{self['access'].auto_id}_reason"
            )
            sent = self.data.get(self.add_prefix("access")) if self.is_bound else None
            if self.is_bound and sent != "ro":
                self.data = self.data.copy()
                self.data[self.add_prefix("access")] = "ro"
                self.forced_read_only = value if sent else ""
            elif not self.is_bound:
                self.initial["access"] = "ro"
        self.fields["source_path"].widget.attrs["placeholder"] = _("blank or / = whole volume")
        self.fields["mount_path"].widget.attrs["placeholder"] = "/workspace"
        self.fields["mount_path"].widget.attrs["aria-required"] = "true"  # the spec requires it
        # The help under the table (_data.html) says what both paths take, and a local disk's
        # or BOS's what its source path is: each row's paths point at it, or a screen reader
        # in a row never heard it (qa64). A row redrawn for its new type points at that one's.
        source_help = source_path_help(pool, self.chosen_type())
        self.fields["source_path"].widget.attrs["aria-describedby"] = " ".join(source_help)
        self.fields["mount_path"].widget.attrs["aria-describedby"] = "mount-help"
        _styled(self)

    def chosen_type(self) -> str:
        if self.is_bound:
            return str(self.data.get(self.add_prefix("type")) or "")
        return str(self.initial.get("type") or "")

    def clean(self) -> dict[str, Any]:
        data = super().clean()
        if self.forced_read_only:
            self.add_error(
                "access",
                _(
                    "Volume %(volume)s is read-only for everyone (set by the administrator): "
                    "this row now mounts it read-only. Check the row and go on."
                )
                % {"volume": self.forced_read_only},
            )
        wrong = self.refitted
        if wrong is not None:
            values = {
                "volume": wrong.name,
                "volume_type": STORAGE_LABELS.get(wrong.type, wrong.type),
                "type": STORAGE_LABELS.get(self.chosen_type(), self.chosen_type()),
                "fitted": data.get("name") or "",
            }
            self.add_error(
                "name",
                (
                    _(
                        "%(volume)s is a %(volume_type)s volume, not %(type)s: this row now "
                        "mounts %(fitted)s, the only %(type)s volume. Check the row and go on."
                    )
                    if values["fitted"]
                    else _(
                        "%(volume)s is a %(volume_type)s volume, not %(type)s, so it was taken "
                        "out of this row. Check the row and go on."
                    )
                )
                % values,
            )
        return data


class FaultForm(StepForm):
    hang_detection = forms.BooleanField(
        label=_("Hang detection"),
        required=False,
        # Seed 000's two notes: the event, and BCCL's state in the log, which AIHC writes
        # (the image's BCCL does, when the platform asks; the local runner has no BCCL).
        # What a hang then does, with fault tolerance and without (qa109: a hung job with
        # fault tolerance on was only warned about; jobs.runner._restart_hung).
        help_text=_(
            "When the logs of all replicas stay silent for the threshold, the job is judged "
            "hung and a hang event is recorded. With fault tolerance on (below), a hung job "
            "is then restarted as a failed one is, each restart one of its unconditional "
            "retries, and fails once they are used up, freeing its cards; without it, the "
            "job keeps running, holding its cards, until it writes again, ends or reaches "
            "its time limit. On AIHC, when the training image includes Baidu's BCCL "
            "collective-communication library, its communication state is also written to "
            "the log when the job hangs, for diagnosing it."
        ),
    )
    hang_minutes = forms.IntegerField(label=_("Hang threshold (minutes)"), required=False)
    # AIHC's --hang-detection-startup-toleration-minutes (review59): a job loading a
    # checkpoint silently for longer than the threshold was restarted at each attempt.
    hang_startup_minutes = forms.IntegerField(
        label=_("Start-up toleration (minutes)"),
        required=False,
        min_value=0,
        widget=forms.NumberInput(attrs={"placeholder": S.DEFAULT_HANG_STARTUP_TOLERATION_MINUTES}),
    )
    fault_tolerance = forms.BooleanField(
        label=_("Fault tolerance"),
        required=False,
        help_text=_(
            "Restarts the job on detected faults, a hang found by hang detection (above) "
            "among them (PyTorch only)."
        ),
    )
    retry_limit = forms.IntegerField(
        label=_("Unconditional retries"),
        required=False,
        # Left empty, the local runner (jobs.runner.DEFAULT_RESTART_LIMIT) and the Kubernetes
        # manifest (jobs.kubernetes.manifests.retries) take 3; AIHC is sent no value (QA 44).
        help_text=_(
            "Restarts after a failure of any cause, a detected hang included (unconditional: "
            "no node fault need be detected); at most 3. Left empty: 3 on the local and "
            "Kubernetes pools; an AIHC pool is sent no value and uses its own default."
        ),
    )
    custom_patterns = forms.CharField(
        label=_("Log keywords that trigger fault tolerance"),
        required=False,
        max_length=20000,
        widget=forms.Textarea(attrs={"rows": 2, "placeholder": "Loss nan"}),
        help_text=_("One keyword per line, matched exactly in the logs."),
    )
    enable_bccl = forms.BooleanField(
        label=_("BCCL auto-injection"),
        required=False,
        help_text=_(
            "Injects the BCCL collective-communication library; needs all four conditions below. "
            "The local pool records the choice but injects nothing: its jobs use the "
            "libraries of this machine."
        ),
    )

    def __init__(
        self,
        *args: Any,
        trainer_pool: bool = False,
        kubeflow_v1_pool: bool = False,
        aihc_pool: bool = False,
        **kwargs: Any,
    ) -> None:
        """`trainer_pool`: the pool runs PyTorch jobs as Kubeflow Trainer TrainJobs, which
        refuse fault tolerance (its restarts are the training runtime's): said where it is
        turned on, not only after. `kubeflow_v1_pool`: the pool runs them as training-operator
        jobs (or JobSets), which the console (or JobSet) restarts by deleting them and
        creating them again (README's runPolicy bullet, fix107): the limit's help says so
        there, and which of the failed run's logs the console keeps (fix115). `aihc_pool`:
        AIHC's fault tolerance decides what a hang does there, not the console's (review59:
        the help told of the local pool's restarts on an AIHC pool)."""
        super().__init__(*args, **kwargs)
        _mark_required(self, "hang_minutes")
        # What the threshold counts and its range, as the other fields say theirs (qa115: it
        # had no help).
        self.fields["hang_minutes"].help_text = _(
            "How long the logs of all replicas must stay silent for the job to count as hung: "
            "from 1 to %(max)s minutes (365 days)."
        ) % {"max": S.max_minutes_said()}
        # A negative toleration is refused here, a too large one by the spec's rule: both in
        # the spec's words (qa115: Django's "确保该值大于或等于0。" below, the range above).
        self.fields["hang_startup_minutes"].error_messages["min_value"] = (
            S.startup_toleration_range_said()
        )
        help_anchored(self, hang_detection="hang-detection", fault_tolerance="fault-tolerance")
        # The unit said with the number (qa113: "留空时：15。" said 15 of nothing).
        self.fields["hang_startup_minutes"].help_text = ngettext(
            "How long each start (or restart) of the job may stay silent, loading a checkpoint "
            "for example, before its silence counts as a hang; once a replica writes a line, "
            "the threshold counts from its last line. Left empty: %(minutes)d minute.",
            "How long each start (or restart) of the job may stay silent, loading a checkpoint "
            "for example, before its silence counts as a hang; once a replica writes a line, "
            "the threshold counts from its last line. Left empty: %(minutes)d minutes.",
            S.DEFAULT_HANG_STARTUP_TOLERATION_MINUTES,
        ) % {"minutes": S.DEFAULT_HANG_STARTUP_TOLERATION_MINUTES}
        if kubeflow_v1_pool or trainer_pool:
            # The pool refuses the switch (jobs.backends.kubernetes): said where it is.
            self.fields["hang_detection"].help_text = _(
                "Not on this pool: the console detects no hang of a job on a Kubernetes pool "
                "yet. Leave it off."
            )
        if aihc_pool:
            self.fields["hang_startup_minutes"].help_text = _(
                "How long each start (or restart) of the job may stay silent, loading a "
                "checkpoint for example, before AIHC counts its silence as a hang. Left empty: "
                "AIHC is sent no value and uses its own default."
            )
            self.fields["hang_detection"].help_text = _(
                "When the logs of all replicas stay silent for the threshold, AIHC judges the "
                "job hung and records a hang event. What a hung job then does, restarted or "
                "left running, is decided by AIHC's fault tolerance (below). When the training "
                "image includes Baidu's BCCL collective-communication library, its "
                "communication state is also written to the log when the job hangs, for "
                "diagnosing it."
            )
            self.fields["retry_limit"].help_text = _(
                "Restarts after a failure of any cause (unconditional: no node fault need be "
                "detected); at most 3. Whether a hang counts among them is AIHC's fault "
                "tolerance's decision. Left empty: AIHC is sent no value and uses its own "
                "default."
            )
        if kubeflow_v1_pool:
            self.fields["fault_tolerance"].help_text = _(
                "Restarts the job when it fails (PyTorch only). This pool detects no hang, so "
                "a hang restarts nothing."
            )
            self.fields["retry_limit"].help_text = _(
                "On this pool a failed job is restarted whole: deleted from the cluster and "
                "created again, every replica, up to this many times; at most 3, left empty "
                "3. The console keeps the failed run's events and logs (the last %(size)d MB "
                "of each replica's); of a custom job, which its JobSet restarts, the events "
                "only."
            ) % {"size": MAX_TAIL_BYTES // 2**20}
        if trainer_pool:
            self.fields["fault_tolerance"].help_text = _(
                "Not on this pool: a PyTorch job here is a Kubeflow Trainer TrainJob, whose "
                "training runtime on the cluster decides restarts. Leave it off."
            )
        # A switch's own settings show only while it is on (console.css).
        self.helper = _helper(
            WizardField("hang_detection"),
            Div(
                WizardField("hang_minutes"),
                WizardField("hang_startup_minutes"),
                css_id="hang-fields",
            ),
            WizardField("fault_tolerance"),
            Div(
                WizardField("retry_limit"),
                WizardField("custom_patterns"),
                css_id="fault-tolerance-fields",
            ),
            show_errors=self.show_errors,
        )

    def clean(self) -> dict[str, Any]:
        data = super().clean()
        _ignore_when_off(self, data, "hang_detection", "hang_minutes", "hang_startup_minutes")
        _ignore_when_off(self, data, "fault_tolerance", "retry_limit", "custom_patterns")
        return data


def _ignore_when_off(form: forms.Form, data: dict[str, Any], switch: str, *names: str) -> None:
    """A switch that is off ignores its settings, hidden then: what they hold (a half-typed
    value left from trying the switch) must not block the step."""
    if not data.get(switch):
        for name in names:
            form._errors.pop(name, None)


class AdvancedForm(StepForm):
    tensorboard = forms.BooleanField(label=_("TensorBoard"), required=False)
    tensorboard_path = forms.CharField(
        label=_("TensorBoard log path"),
        required=False,
        max_length=1024,
        help_text=_(
            "Must match the log path in your code, or TensorBoard finds no data; injected as "
            "AIHC_TENSORBOARD_LOG_PATH. The local pool starts no TensorBoard: when the path "
            "lies on a read-write volume the job mounts (step Data sources), the job page draws "
            "the scalars (loss, lr, …) of the event files written there. Elsewhere it draws "
            "none: in the job's own /tmp the files are lost when it ends, and the rest of its "
            "file system is read-only."
        ),
    )
    auto_delete = forms.BooleanField(
        label=_("Delete automatically after the job ends"),
        required=False,
        help_text=_(
            "Applies to succeeded and failed (including timed-out) jobs, after the retention "
            "time; a stopped job is kept. The job and its logs are deleted; what it wrote to "
            "its mounts (checkpoints, event files) is kept."
        ),
    )
    # The API's retentionPeriod is "<1-999999><m|h|d>": a number the form can check itself.
    retention_value = forms.IntegerField(
        label=_("Keep for"),
        required=False,
        min_value=1,
        max_value=999999,
        error_messages={
            "min_value": _("The retention time must be between 1 and 999999."),
            "max_value": _("The retention time must be between 1 and 999999."),
        },
    )
    retention_unit = forms.ChoiceField(label=_("Unit"), choices=RETENTION_UNITS)
    alert_items = forms.MultipleChoiceField(
        label=_("Alerts"),
        required=False,
        choices=ALERT_CHOICES,
        widget=forms.CheckboxSelectMultiple,
        # The two events that need a switch of step 5 say so before any refusal: without
        # it neither ever comes (jobHang is refused on every pool, jobFT on the local one;
        # an AIHC pool takes jobFT without fault tolerance, as AIHC does, and the field then
        # ends with a warning: alert_warning_said, wizard.fault_tolerance_alert_unsent). Said
        # as facts true on every pool and framework (qa79: "needs fault tolerance" read as a
        # rule beside AIHC's warning that the event is taken without it, and as advice an
        # MPI job, which cannot have it, could not follow). Who sends them depends on the
        # pool: ALERT_SENDERS.
        help_text=ALERT_HELP["local"],
    )
    alert_emails = forms.CharField(
        label=_("Alert emails"),
        required=False,
        max_length=10000,
        # An email keyboard (@ and . at hand) for the addresses; one per line still works.
        widget=forms.Textarea(attrs={"rows": 2, "inputmode": "email"}),
        help_text=_("One address per line, or several separated by commas or semicolons."),
    )
    alert_webhooks = forms.CharField(
        label=_("Alert webhooks"),
        required=False,
        max_length=10000,
        widget=forms.Textarea(attrs={"rows": 2, "inputmode": "url"}),
        help_text=_(
            "One http(s) URL per line. Feishu/Lark, WeCom, DingTalk and Slack group bots get a "
            "chat message; for a DingTalk or Feishu bot with signing on, add #secret= and its "
            "secret after the URL; for one with custom keywords, make “AI Job Console” one of "
            "them (every message starts with it). Any other URL gets the console's JSON."
        ),
    )
    # AIHC pools only: AIHC alerts go through a notify policy of the Prometheus monitoring
    # instance the pool is connected to (alertConfig.instanceId / notifyRuleId).
    alert_instance_id = forms.CharField(
        label=_("Monitoring instance ID"),
        required=False,
        max_length=256,
        help_text=_("The Prometheus monitoring instance the resource pool is connected to."),
    )
    alert_notify_rule_id = forms.CharField(
        label=_("Notify policy ID"),
        required=False,
        max_length=256,
        help_text=_(
            "The notify policy that says who gets the alerts and how (email, SMS, phone, "
            "DingTalk, WeCom, Feishu), e.g. notify-xxxxxxxx."
        ),
    )
    timeout_minutes = forms.IntegerField(
        label=_("Job timeout (minutes)"),
        # Optional, as shared memory is: empty means the default, 30 days (qa60: cleared, it
        # said "required" where a cleared shared memory took its 10Gi).
        required=False,
        widget=forms.NumberInput(attrs={"placeholder": str(S.DEFAULT_TIMEOUT_MINUTES)}),
        help_text=_(
            "Counted from the start; the platform stops the job after it, so that a job does "
            "not hold its cards forever. Empty: 30 days (43200 minutes), the default."
        ),
    )
    cpu_exclusive = forms.BooleanField(
        label=_("CPU exclusive (Beta)"),
        required=False,
        help_text=_(
            "Pins each replica to CPU cores of its own, which other jobs do not use: as "
            "many cores as the role's CPU cores; when those are unlimited, one per card "
            "(1 for a replica without cards)."
        ),
    )

    privileged = forms.BooleanField(
        label=_("Privileged mode"),
        required=False,
        help_text=_(
            "Runs every container privileged: full access to the devices and kernel of the "
            "node it runs on (e.g. for RDMA or profiling tools). Offered only where the "
            "operator allows it; a reviewer may have to approve the job first."
        ),
    )

    def __init__(
        self,
        *args: Any,
        backend: str = "local",
        privileged: bool = False,
        node_alerts: bool = True,
        **kwargs: Any,
    ) -> None:
        """`backend`: the pool's, which says who sends the alerts (ALERT_HELP) and whether
        AIHC's notify policy is asked for. `privileged`: offer the Privileged mode switch (the pool allows it, or the draft
        asks for it: an imported or copied job's, which the pool's refusal is then said on).
        `node_alerts`: offer “A node of the job fails” (not on the local pool, where it never
        comes, unless the draft asks for it: the pool's refusal is then said on the field)."""
        super().__init__(*args, **kwargs)
        self.fields["alert_items"].help_text = ALERT_HELP.get(backend, ALERT_HELP["local"])
        if not node_alerts:
            field = self.fields["alert_items"]
            field.choices = [c for c in ALERT_CHOICES if c[0] != "nodeFT"]
        if mail_printed_only():  # said where the addresses are typed, not only after a failure
            field = self.fields["alert_emails"]
            # Joined as the language joins sentences: no space after a Chinese “。”.
            field.help_text = S.sentences(
                field.help_text,
                _(
                    "No mail server is set for this console (EMAIL_HOST): alert emails are "
                    "only written to its log until an administrator sets one."
                ),
            )
        _mark_required(self, "tensorboard_path", "retention_value")
        help_anchored(self, tensorboard_path="tensorboard")
        alert_ids = ["alert_instance_id", "alert_notify_rule_id"]
        aihc_alerts = backend == "aihc"
        if not aihc_alerts:
            for name in alert_ids:
                del self.fields[name]
        if not privileged:
            del self.fields["privileged"]
        # A switch's own settings show only while it is on (console.css).
        self.helper = _helper(
            WizardField("tensorboard"),
            Div(WizardField("tensorboard_path"), css_id="tensorboard-fields"),
            WizardField("auto_delete"),
            Div(
                WizardField("retention_value", wrapper_class="col-md-4"),
                WizardField("retention_unit", wrapper_class="col-md-4"),
                css_class="row",
                css_id="retention-fields",
            ),
            WizardField("alert_items"),
            *(WizardField(name) for name in alert_ids if aihc_alerts),
            WizardField("alert_emails"),
            WizardField("alert_webhooks"),
            WizardField("timeout_minutes"),
            WizardField("cpu_exclusive"),
            *([WizardField("privileged")] if privileged else []),
            show_errors=self.show_errors,
        )

    def alert_warning_said(self, message: str, *, shown: bool = True) -> None:
        """A warning, not an error, on the alert events: their help text ends with it, set
        apart in the warning colour, so a screen reader hears it with the group (its
        aria-describedby names the help text) and the step is still taken. Not `shown`, it is
        drawn hidden, for wizard.js to show once its event is ticked (hidden, a screen reader
        does not hear it)."""
        # On the bound field, which the form keeps once made (a refused 下一步 made it): a
        # change of the field's own help text would not reach it then.
        bound = self["alert_items"]
        bound.help_text = format_html(
            '{}<span class="mt-1 text-warning-emphasis" id="alert-items-warning"{}>{}</span>',
            bound.help_text,
            "" if shown else " hidden",
            message,
        )

    def clean(self) -> dict[str, Any]:
        data = super().clean()
        _ignore_when_off(self, data, "tensorboard", "tensorboard_path")
        _ignore_when_off(self, data, "auto_delete", "retention_value", "retention_unit")
        missing = data.get("auto_delete") and data.get("retention_value") is None
        if missing and "retention_value" not in self.errors:
            self.add_error("retention_value", _("Enter how long to keep the job."))
        return data


class SubmissionForm(StepForm):
    mode = forms.ChoiceField(
        label=_("Submission"),
        choices=SUBMISSION_CHOICES,
        widget=forms.RadioSelect,
        help_text=_(
            "A standalone job is one job; a queue task is a group of jobs with the same "
            "settings, sent to a queue."
        ),
    )
    target_queue = forms.ChoiceField(label=_("Target queue"), required=False)
    # Queue tasks only (seed 004): a standalone job ignores them, so they are required
    # in queue mode alone (clean) and hidden otherwise (console.css).
    total = forms.IntegerField(
        label=_("Tasks in the group"),
        required=False,
        help_text=_("How many training jobs this group creates (not nodes, not cards)."),
    )
    concurrency = forms.IntegerField(
        label=_("Max concurrent tasks"),
        required=False,
        help_text=_(
            "Fewer run at once while the pool lacks idle cards, or your card quota (on the local "
            "pool) or the queue's own limits hold them."
        ),
    )

    def __init__(self, *args: Any, queues: list[str], **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.fields["target_queue"].choices = [(q, q) for q in queues]
        help_anchored(self, mode="queue-tasks")
        # Seed 004: 投递目标队列 is required of a queue task, as the group's two counts are;
        # said to a screen reader too (qa84: the counts showed the * alone).
        _mark_required(self, "target_queue", "total", "concurrency")
        self.helper = _helper(
            WizardField("mode"),
            Div(
                WizardField("target_queue"),
                WizardField("total"),
                WizardField("concurrency"),
                css_id="queue-fields",
            ),
            show_errors=self.show_errors,
        )

    def clean(self) -> dict[str, Any]:
        data = super().clean()
        queue_fields = ("target_queue", "total", "concurrency")
        if data.get("mode") == S.SUBMIT_QUEUE:
            for name in queue_fields:
                if data.get(name) in (None, "") and name not in self.errors:
                    self.add_error(name, forms.Field.default_error_messages["required"])
        elif data.get("mode"):
            # A standalone job ignores the queue-task fields, hidden then: what they hold
            # (a half-typed 2.5 left from trying 队列任务) must not block it.
            for name in queue_fields:
                self._errors.pop(name, None)
        return data


EnvFormSet = formset_factory(
    EnvForm,
    formset=LeanFormSet,
    extra=0,
    max_num=MAX_ROWS,
    absolute_max=MAX_ROWS,
    validate_max=True,
)


class LabelRowsFormSet(LeanFormSet):
    """The 标签 table: more rows than a job may have labels is said in the labels' words."""

    default_error_messages = {
        "too_many_forms": _("A job has at most %(num)d labels; remove some rows."),
    }


LabelFormSet = formset_factory(
    LabelForm,
    formset=LabelRowsFormSet,
    extra=0,
    max_num=MAX_ROWS,
    absolute_max=MAX_ROWS,
    validate_max=True,
)
RoleFormSet = formset_factory(
    RoleForm,
    formset=LeanFormSet,
    extra=0,
    max_num=MAX_ROWS,
    absolute_max=MAX_ROWS,
    validate_max=True,
)
MountFormSet = formset_factory(
    MountForm,
    formset=LeanFormSet,
    extra=0,
    max_num=MAX_ROWS,
    absolute_max=MAX_ROWS,
    validate_max=True,
)


class NamedWithId(str):
    """A pool's label that says its id already (one no longer offered: jobs.pools'
    no_longer_offered): pool_with_id adds none after it."""


def pool_with_id(name: str, pool_id: str) -> str:
    """A pool's name followed by its id, "name (id)", or the name alone when it says the id
    already: "本机 Local (local)" named the local pool three times (qa92), and a pool no longer
    offered is named with its id (jobs.pools.no_longer_offered)."""
    if not name:
        return pool_id
    if isinstance(name, NamedWithId) or pool_id.casefold() in name.casefold().split():
        return name
    return f"{name} ({pool_id})"


class ImportForm(forms.Form):
    """从请求导入 on the drafts page: a CreateJob body pasted or uploaded, and a pool for a
    body that names none. jobs.wizard_import reads the body; this only gets its text."""

    body = forms.CharField(
        label=_("Request body (JSON)"), required=False, strip=False, widget=forms.Textarea
    )
    file = forms.FileField(label=_("Or a .json file"), required=False)
    resource_pool = forms.ChoiceField(label=_("Resource pool"), required=False)

    def __init__(self, *args: Any, pools: list[Pool], **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.fields["resource_pool"].choices = [("", _("As the request says (resourcePoolId)"))] + [
            (p.id, pool_with_id(p.name, p.id)) for p in pools
        ]

    def clean(self) -> dict[str, Any]:
        from .wizard_import import MAX_IMPORT_BYTES, too_large_message

        data = super().clean()
        upload = data.get("file")
        text = data.get("body") or ""
        if upload is not None:
            # Read no more than the limit (and one byte): a file is refused by its size
            # before it is held in memory whole.
            raw = upload.read(MAX_IMPORT_BYTES + 1)
            if len(raw) > MAX_IMPORT_BYTES:
                self.add_error("file", too_large_message())
                return data
            try:
                text = raw.decode("utf-8-sig")
            except UnicodeDecodeError:
                self.add_error("file", _("The file is not UTF-8 text; save it as UTF-8 JSON."))
                return data
        elif len(text.encode("utf-8", "surrogatepass")) > MAX_IMPORT_BYTES:
            self.add_error("body", too_large_message())
        if not text.strip():
            self.add_error("body", _("Paste a CreateJob request body, or choose a .json file."))
        # The box shows the file's text on an error, so a line and column point into it.
        data["text"] = text.removeprefix("\ufeff")
        return data
