"""Views of the create-training-job wizard. Thin: the flow and the rules live in jobs.wizard.

Every page works without JavaScript (plain POST, then redirect); with htmx the same URLs
answer with the `wizard-region` fragment (stepper + form) or a small partial, chosen here.
"""

from __future__ import annotations

import functools
import json
import uuid
from collections.abc import Callable
from typing import Any
from urllib.parse import parse_qsl, urlencode, urlsplit

from django.conf import settings
from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.exceptions import ValidationError
from django.http import Http404, HttpRequest, HttpResponse, HttpResponseRedirect, QueryDict
from django.shortcuts import get_object_or_404, redirect, render
from django.urls import reverse
from django.utils import translation
from django.utils.html import conditional_escape, format_html
from django.utils.http import url_has_allowed_host_and_scheme
from django.utils.translation import gettext as _
from django.utils.translation import gettext_lazy, ngettext
from django.views.decorators.cache import never_cache
from django.views.decorators.http import require_http_methods, require_safe
from django.views.decorators.vary import vary_on_headers
from django_htmx.http import HttpResponseClientRedirect, push_url

from . import forms as F
from . import spec as S
from . import wizard as W
from . import wizard_import as I
from .backends.local import POOL_ID as LOCAL_POOL_ID
from .http import AuthenticatedHttpRequest, is_console_address, post_only, typed_before_login
from .languages import language_chosen, language_cookie_set
from .models import Draft, Job, JobStatus
from .pools import spec_pool_names
from .quotas import over_quota_note, quota_lines
from .review import review_reason
from .summary import spec_sections
from .texts import display_text, source_of
from .views import PAGE_SIZE, ListPage
from .volume_access import pool_for_user, volume_refusals

STEP_TEMPLATE = "jobs/wizard/step.html"


def _draft(request: AuthenticatedHttpRequest, draft_id: Any) -> Draft:
    """The user's draft (404 for anyone else's)."""
    draft = get_object_or_404(Draft, id=draft_id, owner=request.user)
    # Its owner is the user already read for the request: no second query of the same row
    # (the review and submission steps check the owner's quota).
    draft.owner = request.user
    return draft


def _draft_id_only(request: AuthenticatedHttpRequest, draft_id: Any) -> Draft:
    """The user's draft with only its id read (404 for anyone else's), for partials."""
    draft = W.owned_draft_id_only(draft_id=draft_id, owner=request.user)
    if draft is None:
        raise Http404
    return draft


def _draft_pool_id(request: AuthenticatedHttpRequest, draft_id: Any) -> str:
    """The resource pool chosen in the user's draft, read without loading the draft."""
    pool_id = W.owned_draft_pool_id(draft_id=draft_id, owner=request.user)
    if pool_id is None:
        raise Http404
    return pool_id


def _step_url(draft: Draft, step: str) -> str:
    return reverse("wizard-step", args=[draft.id, step])


@require_http_methods(["GET", "HEAD", "POST"])
@login_required
@never_cache  # Back reloads it: a fresh New draft key, not the one a draft was made with
def wizard_start(request: AuthenticatedHttpRequest) -> HttpResponse:
    # ?pool=<id> (the pools page's 在此资源池创建任务) starts the draft in that pool; a pool
    # the console does not offer (gone, mistyped) is ignored.
    pool_id = str(request.GET.get("pool", ""))
    if request.method == "POST":
        draft = W.draft_create(
            owner=request.user, pool_id=pool_id, create_key=request.POST.get("create_key", "")
        )
        return redirect(_step_url(draft, W.BASIC))
    context = _start_context(request, pool_id)
    typed = typed_before_login(request, page=reverse("wizard-start"))
    if typed is not None:
        context.update(_import_typed_again(request, typed))
    elif (switched := _import_switched_context(request)) is not None:
        context.update(switched)
    return render(request, "jobs/wizard/start.html", context)


def _import_typed_again(request: AuthenticatedHttpRequest, typed: QueryDict) -> dict[str, Any]:
    """The import box as it was sent after the log-in had ended (wizard_import's `kept`):
    the text in it again, not imported (the login page said nothing was done), its secret
    values as ****** and kept for the page's 导入, as after a refusal."""
    key = str(typed.get("create_key", ""))
    key = key if W.CREATE_KEY_RE.fullmatch(key) else ""
    # The .json file chosen, if any, as the form reads it: instead of the box's text.
    text = str(typed.get("file") or typed.get("body", ""))
    if key:
        full, _restored = I.secrets_restored(session=request.session, create_key=key, text=text)
        I.secrets_kept(session=request.session, create_key=key, text=full)
    form = F.ImportForm(
        initial={"resource_pool": typed.get("resource_pool", "")}, pools=W.available_pools()
    )
    return _import_context(form, I.shown_text(text), key, drafts_url=reverse("wizard-start"))


def _start_context(request: AuthenticatedHttpRequest, pool_id: str) -> dict[str, Any]:
    drafts = Draft.objects.filter(owner=request.user, submitted_at__isnull=True).order_by(
        "-updated_at", "-id"
    )
    page = ListPage.of(drafts, request.GET.get("page"))
    # Resume opens where the draft stopped: its first step not yet passed (the review when
    # every step has).
    rows = [(draft, W.first_incomplete(draft)) for draft in page.object_list]
    pools = W.available_pools()  # read once: the new-draft button's pool and the import's select
    return {
        "page": page,
        "rows": [
            (
                draft,
                W.STEP_TITLES[step],
                _step_url(draft, step),
                bool(draft.data.get(I.IMPORTED)),
                # A copy whose source job has been deleted since is still a copy.
                draft.source_job_id is not None or W.copied_from_deleted(draft) is not None,
            )
            for draft, step in rows
        ],
        # Of every step, the review too, as the wizard counts them ("Step 8 of 8"; qa101).
        "step_count": len(W.STEPS),
        # A GET also keeps the pool, for the new-draft button (a draft is made by a POST only).
        "pool": next((p for p in pools if p.id == pool_id), None) if pool_id else None,
        # New draft's one-time key: the same click sent twice makes one draft.
        "create_key": uuid.uuid4().hex,
        **_import_context(
            F.ImportForm(pools=pools), drafts_url=_without_switched_import(request.get_full_path())
        ),
    }


def _import_context(
    form: F.ImportForm, text: str = "", key: str = "", *, drafts_url: str = ""
) -> dict[str, Any]:
    return {
        # Where the language switch returns when the import box is empty: the drafts page as
        # it was opened (its page number and pool kept).
        "drafts_url": drafts_url or reverse("wizard-start"),
        "import_form": form,
        "import_text": text,
        "import_key": key or uuid.uuid4().hex,
        "import_max_kb": I.MAX_IMPORT_BYTES // 1024,
    }


# A paste sent after the log-in ended comes back in the box once its user has logged in
# (wizard_start); with JavaScript the page first stays as it is (the 401), saying to reload.
@post_only(lambda: reverse("wizard-start"), kept=("body", "file", "resource_pool", "create_key"))
@login_required
@never_cache  # a refusal shows what was pasted again: not for Back or history to keep
def wizard_import(request: AuthenticatedHttpRequest) -> HttpResponse:
    """从请求导入: a draft from a pasted or uploaded CreateJob body (jobs.wizard_import). A
    refusal shows the form again with each problem and the text kept (secrets masked); with
    htmx only the import section is swapped."""
    language = str(request.POST.get("action", "")).removeprefix("language-")
    if language in dict(settings.LANGUAGES):
        return _import_language_switched(request, language)
    form = F.ImportForm(request.POST, request.FILES, pools=W.available_pools())
    key = str(request.POST.get("create_key", ""))
    text = str(request.POST.get("body", ""))
    # Secrets this page's refused import held come back where the box has ****** for them
    # (jobs.wizard_import, "kept for the page"); `full` is never shown.
    if not form.is_valid():
        text = I.form_refused_text(session=request.session, create_key=key, text=text)
    else:
        sent = form.cleaned_data["text"]
        full, restored = I.secrets_restored(session=request.session, create_key=key, text=sent)
        try:
            imported = I.draft_import(
                owner=request.user,
                text=full,
                pool_id=form.cleaned_data["resource_pool"],
                create_key=key,
                sent=sent,
                restored=restored,
            )
        except I.ImportRefusedError as exc:
            I.secrets_kept(session=request.session, create_key=key, text=full)
            # With values put back, the box shows what was sent (masked as it was): the text
            # read is the body rewritten.
            text = I.shown_text(sent) if restored else exc.text
            for name, message in exc.errors:
                form.add_error(name, message)
        else:
            I.secrets_forgotten(session=request.session, create_key=key)
            if (request.session.get(IMPORT_SWITCHED) or {}).get("key") == key:
                del request.session[IMPORT_SWITCHED]
            messages.info(request, _("Imported from a request: check each step, then submit."))
            # Its warnings stay on the draft's steps until it is submitted or they are
            # dismissed (W.IMPORT_NOTICES), not as one-time messages.
            return _redirect(request, _step_url(imported.draft, W.BASIC))
    context = _import_context(form, text, key)
    if request.htmx:
        return render(request, "jobs/wizard/start.html#import-section", context)
    return render(request, "jobs/wizard/start.html", {**_start_context(request, ""), **context})


def _import_language_switched(request: AuthenticatedHttpRequest, language: str) -> HttpResponse:
    """The drafts page's 中文/EN buttons belong to the import form (start.html), so a paste or
    a refused import survives the switch: the drafts page comes back in `language` with the
    text in the box (secret values as ******, as after any refusal: a value typed is never
    sent back; it is kept for the page and put back at 导入, jobs.wizard_import), and a
    refusal shown is checked again, so its messages change language too. Nothing is imported.
    Answered with a redirect, the box's text kept in the session for the page it leads to
    (_import_switched_context): a reload there does not send the form again (qa82: the page
    was this POST's answer, and a reload asked to resubmit it). An empty box just reopens the
    drafts page (`next`) in that language."""
    form = F.ImportForm(request.POST, request.FILES, pools=W.available_pools())
    key = str(request.POST.get("create_key", ""))
    body = str(request.POST.get("body", ""))
    refused = request.POST.get("refused") == "1"
    url = str(request.POST.get("next", ""))
    if not url_has_allowed_host_and_scheme(
        url, allowed_hosts={request.get_host()}, require_https=request.is_secure()
    ) or not is_console_address(url):
        url = reverse("wizard-start")
    url = _without_switched_import(url)
    if not refused and not body.strip() and not request.FILES:
        return _language_switched(request, url, language)
    key = key if W.CREATE_KEY_RE.fullmatch(key) else uuid.uuid4().hex
    # The .json file chosen, if any, as the form reads it: instead of the box's text.
    text = form.cleaned_data["text"] if form.is_valid() else body
    # The secrets typed stay with the page (secrets_kept), for 导入 after the switch; the
    # session keeps the text only as the box shows it, with them as ******.
    full, _restored = I.secrets_restored(session=request.session, create_key=key, text=text)
    I.secrets_kept(session=request.session, create_key=key, text=full)
    request.session[IMPORT_SWITCHED] = {
        "key": key,
        "text": I.shown_text(text),
        "pool": str(request.POST.get("resource_pool", "")),
        "refused": refused,
    }
    split = urlsplit(url)
    query = urlencode([*parse_qsl(split.query), (IMPORT_SWITCHED_PARAMETER, key)])
    return _language_switched(request, split._replace(query=query).geturl(), language)


# The import box as the language switch left it (_import_language_switched), for the drafts
# page it redirects to: that page's address names it (?import=<the form's key>), so a reload
# shows it again, and the drafts page opened any other way has an empty box. Only the last is
# kept; an import that makes a draft from it drops it.
IMPORT_SWITCHED = "wizard_import_switched"
IMPORT_SWITCHED_PARAMETER = "import"


def _without_switched_import(url: str) -> str:
    """The drafts page's address without its ?import=: the page where the box starts empty."""
    split = urlsplit(url)
    query = [(k, v) for k, v in parse_qsl(split.query) if k != IMPORT_SWITCHED_PARAMETER]
    return split._replace(query=urlencode(query)).geturl()


def _import_switched_context(request: AuthenticatedHttpRequest) -> dict[str, Any] | None:
    """The import box as the language switch left it, when this address names it; None
    otherwise. A refusal is checked again, in the page's language."""
    kept = request.session.get(IMPORT_SWITCHED)
    key = str(request.GET.get(IMPORT_SWITCHED_PARAMETER, ""))
    if not isinstance(kept, dict) or not key or kept.get("key") != key:
        return None
    text, pool = str(kept.get("text", "")), str(kept.get("pool", ""))
    pools = W.available_pools()
    drafts_url = _without_switched_import(request.get_full_path())
    if not kept.get("refused"):
        # A paste not yet imported: kept, but not judged before 导入 is pressed.
        form = F.ImportForm(initial={"resource_pool": pool}, pools=pools)
        return _import_context(form, text, key, drafts_url=drafts_url)
    form = F.ImportForm({"body": text, "resource_pool": pool, "create_key": key}, pools=pools)
    if not form.is_valid():
        text = I.form_refused_text(session=request.session, create_key=key, text=text)
    else:
        sent = form.cleaned_data["text"]
        full, restored = I.secrets_restored(session=request.session, create_key=key, text=sent)
        shown, errors = I.rechecked(
            text=full, pool_id=form.cleaned_data["resource_pool"], restored=restored
        )
        text = I.shown_text(sent) if restored else shown
        for name, message in errors:
            form.add_error(name, message)
    return _import_context(form, text, key, drafts_url=drafts_url)


@post_only(lambda draft_id: reverse("wizard-start"))
@login_required
def wizard_discard(request: AuthenticatedHttpRequest, draft_id: Any) -> HttpResponse:
    discarded = request.session.get(DISCARDED_DRAFTS, [])
    if str(draft_id) in discarded:
        # Discarded already from this browser (删除 pressed twice, or in another tab): the
        # same answer as the first time, not a 404. Only a draft this session discarded is
        # answered so: anyone else's id, or one never made, is still a 404.
        return _discarded(request)
    draft = _draft(request, draft_id)
    if request.POST.get("confirmed") != "1":
        # Asked in the browser with JavaScript (data-confirm, console.js adds `confirmed`);
        # without it, on a page of its own first: what a draft holds cannot be brought back.
        return render(
            request,
            "jobs/wizard/discard_confirm.html",
            {
                "draft": draft,
                "page_number": ListPage.number_of(request.POST.get("page")),
            },
        )
    draft.delete()
    request.session[DISCARDED_DRAFTS] = [*discarded, str(draft_id)][-DISCARDED_DRAFTS_KEPT:]
    return _discarded(request)


# The drafts this browser's session discarded last (wizard_discard): a second 删除 of one
# answers as the first did.
DISCARDED_DRAFTS = "wizard_discarded_drafts"
DISCARDED_DRAFTS_KEPT = 20


def _discarded(request: AuthenticatedHttpRequest) -> HttpResponse:
    messages.success(request, _("Draft discarded."))
    # Back to the page of My drafts the Discard was pressed on, not to the first: a page
    # emptied by it (its last draft) gives way to the last page that still has drafts.
    number = ListPage.number_of(request.POST.get("page"))
    left = Draft.objects.filter(owner=request.user, submitted_at__isnull=True).count()
    number = min(number, max(1, -(-left // PAGE_SIZE)))
    url = reverse("wizard-start")
    return redirect(f"{url}?page={number}" if number > 1 else url)


# A step posted after its log-in ended, kept in the visitor's session until the step is
# opened again by the draft's owner (_posted_before_login).
STEP_POSTED_LOGGED_OUT = "wizard_step_posted_logged_out"


# The step form's own fields beside the step's (step.html), and the most kept of a step sent
# logged out (a step's fields are far smaller: a 40 KB command, 50 variables of a line each).
STEP_FORM_KEYS = ("action", "basis", "seen", "check", "fixing")
KEPT_ACROSS_LOGIN_MAX_BYTES = 256 * 1024
# How long a logged-out visitor's session keeping a step lasts: time to log in again, not
# SESSION_COOKIE_AGE (14 days), so a step posted logged out and never claimed (a script
# without cookies makes a row per post; a browser never logged in again) does not leave a
# row of up to 256 KB for two weeks (left28). A log-in gives the session the usual age again.
KEPT_ACROSS_LOGIN_SECONDS = 3600


def _kept_across_login(
    view: Callable[..., HttpResponse],
) -> Callable[..., HttpResponse]:
    """A step posted once its log-in has ended (expired, logged out in another tab) is kept in
    the session before login_required sends it to the login page: logging in keeps an
    anonymous session's data, and the step, opened again after it, saves what was typed
    instead of losing it (README promises that an expired session loses nothing)."""

    @functools.wraps(view)
    def wrapped(request: HttpRequest, draft_id: Any, step: str) -> HttpResponse:
        if (
            request.method == "POST"
            and not request.user.is_authenticated
            and step in W.FORM_STEPS
            # Anyone may post here logged out: only for a draft that exists and is open is
            # anything kept, so a stranger cannot have the sessions table store what they send.
            and Draft.objects.filter(id=draft_id, submitted_at__isnull=True).exists()
        ):
            # The step's own fields and the form's few of its own, as step_post reads them,
            # bounded.
            posted = {
                **W.raw_from_post(request.POST, step),
                **{k: request.POST.getlist(k)[:1] for k in STEP_FORM_KEYS if k in request.POST},
            }
            if len(json.dumps(posted)) <= KEPT_ACROSS_LOGIN_MAX_BYTES:
                request.session[STEP_POSTED_LOGGED_OUT] = {
                    "draft": str(draft_id),
                    "step": step,
                    "post": posted,
                }
                request.session.set_expiry(KEPT_ACROSS_LOGIN_SECONDS)
        return view(request, draft_id, step)

    return wrapped


def _posted_before_login(
    request: AuthenticatedHttpRequest, draft: Draft, step: str
) -> QueryDict | None:
    """What this step's page sent while logged out (_kept_across_login), taken from the
    session once the draft's owner opens that step again; None otherwise."""
    kept = request.session.get(STEP_POSTED_LOGGED_OUT)
    if request.method != "GET" or not isinstance(kept, dict):
        return None
    if kept.get("draft") != str(draft.id) or kept.get("step") != step:
        return None
    del request.session[STEP_POSTED_LOGGED_OUT]
    post = QueryDict(mutable=True)
    for key, values in dict(kept.get("post") or {}).items():
        post.setlist(str(key), [str(v) for v in values][:50])
    messages.info(request, STEP_KEPT_ACROSS_LOGIN)
    return post


def step_posted_logged_out_dropped(
    sender: Any, request: HttpRequest | None, user: Any, **kwargs: Any
) -> None:
    """On log-in (user_logged_in): a step kept from a page whose log-in ended stays only for
    the owner of its draft. Someone else logging in on that browser gets no trace of it."""
    session = getattr(request, "session", None)
    kept = session.get(STEP_POSTED_LOGGED_OUT) if session is not None else None
    if not isinstance(kept, dict):
        return
    # The log-in lasts SESSION_COOKIE_AGE, not the hour the logged-out session was given.
    session.set_expiry(None)
    try:
        owned = Draft.objects.filter(id=kept.get("draft"), owner=user).exists()
    except (ValueError, ValidationError):
        owned = False
    if not owned:
        del session[STEP_POSTED_LOGGED_OUT]


@require_http_methods(["GET", "HEAD", "POST"])
@_kept_across_login
@login_required
@vary_on_headers("HX-Request")
@never_cache  # Back must not show a step as it was before a later change (bfcache included)
def wizard_step(request: AuthenticatedHttpRequest, draft_id: Any, step: str) -> HttpResponse:
    if (
        request.method == "POST"
        and not request.htmx
        and step in W.FORM_STEPS
        and not Draft.objects.filter(id=draft_id, owner=request.user).exists()
    ):
        return _step_of_a_draft_gone(request, draft_id, step)
    draft = _draft(request, draft_id)
    if step not in W.STEPS:
        raise Http404
    if draft.submitted_at is not None:
        return _submitted(request, draft)
    # A POST, or what the step's page sent before its log-in ended, handled as that POST.
    post = request.POST if request.method == "POST" else _posted_before_login(request, draft, step)
    if not W.step_allowed(draft, step):
        first_open = W.first_incomplete(draft)
        if post is not None:
            # Sent from a page shown before an earlier step was reopened (another tab): not
            # saved, and said so, on the step to do first.
            if request.htmx:
                response = _render_step(request, draft, first_open, stale=True)
                push_url(response, _step_url(draft, first_open))
                return response
            messages.warning(request, STALE_STEP)
        return redirect(_step_url(draft, first_open))
    if post is not None:
        language = str(post.get("action", "")).removeprefix("language-")
        if step == W.REVIEW:
            if language in dict(settings.LANGUAGES):
                return _language_switched(request, _step_url(draft, step), language)
            if post.get("action") == "dismiss-notices":
                W.import_notices_dismissed(draft=draft)
            return redirect(_step_url(draft, step))
        try:
            outcome = W.step_post(draft=draft, step=step, post=post)
        except Draft.DoesNotExist:
            raise Http404 from None  # discarded in another window meanwhile
        if outcome.submitted:
            return _submitted(request, draft)
        if outcome.stale:
            return _render_step(request, draft, step, stale=True, fixing=_fixing(post, draft))
        if outcome.overwrites:
            return _render_step(
                request,
                draft,
                step,
                forms=outcome.forms,
                overwrites=True,
                secrets_typed=W.secrets_typed(post, step),
                fixing=_fixing(post, draft),
            )
        if outcome.forms is not None:
            # Still wrong: shown again with its messages, the way back to the review kept.
            return _render_step(
                request, draft, step, forms=outcome.forms, fixing=_fixing(post, draft)
            )
        # A step opened from a review problem (?check=1, kept in the form as `check`) keeps
        # its messages when it comes back after 中文/EN or a row button, until it is left; a
        # step 保存并返回确认 found wrong opens the same way.
        checked = (post.get("check") == "1" and outcome.go_to == step) or outcome.checked
        # And the way back to the review (保存并返回确认) goes with the draft from step to step
        # (`fixing`, in each step's form), until the review is reached.
        fixing = _fixing(post, draft) and outcome.go_to != W.REVIEW
        if language in dict(settings.LANGUAGES):
            query = _step_query(checked=checked, fixing=fixing)
            return _language_switched(request, _step_url(draft, step) + query, language)
        if not request.htmx:
            query = _step_query(checked=checked, fixing=fixing, example=outcome.example)
            return redirect(_step_url(draft, outcome.go_to) + query)
        if not W.step_allowed(draft, outcome.go_to):
            outcome.go_to = W.first_incomplete(draft)
        response = _render_step(request, draft, outcome.go_to, checked=checked, fixing=fixing)
        if outcome.go_to != step:
            push_url(
                response,
                _step_url(draft, outcome.go_to) + _step_query(checked=checked, fixing=fixing),
            )
        return response
    # ?check=1: opened from a problem the review lists (CHECKED_QUERY), shown with its messages.
    return _render_step(
        request,
        draft,
        step,
        checked=request.GET.get("check") == "1",
        fixing=_fixing(request.GET, draft),
    )


def _fixing(params: QueryDict, draft: Draft) -> bool:
    """Whether a step was reached from a problem the review lists (?check=1, or `fixing=1`
    carried from the step it opened): the step then offers 保存并返回确认. Typed by hand on a
    draft that never reached its review, neither does (W.fixing_allowed)."""
    asked = params.get("check") == "1" or params.get("fixing") == "1"
    return asked and W.fixing_allowed(draft)


def _step_query(*, checked: bool, fixing: bool, example: str = "") -> str:
    """A step's address query: its example shown, or its messages (CHECKED_QUERY, which also
    offers the way back to the review), or that way back alone (FIXING_QUERY)."""
    if example:
        return f"?example={example}" + ("&fixing=1" if fixing else "")
    if checked:
        return CHECKED_QUERY
    return FIXING_QUERY if fixing else ""


def _submitted(request: AuthenticatedHttpRequest, draft: Draft) -> HttpResponse:
    """A submitted draft's steps open its job (or say it is gone); they are never saved."""
    job = W.submitted_job(draft)
    if job is not None:
        if request.method == "POST":
            # A page of the draft left open in another tab: what it sent is not saved, and
            # its job opens as a whole page (htmx would put the job page inside the step).
            messages.warning(request, DRAFT_SUBMITTED_ELSEWHERE)
        return _redirect(request, reverse("job-detail", args=[job.public_id]))
    messages.info(request, DRAFT_SPENT)
    return _redirect(request, reverse("job-list"))


def _language_switched(request: AuthenticatedHttpRequest, url: str, language: str) -> HttpResponse:
    """The step again, in `language` (saved as Django's set_language saves it). htmx loads it
    as a whole page: the navigation bar outside the swapped region changes language too."""
    response: HttpResponse = (
        HttpResponseClientRedirect(url) if request.htmx else HttpResponseRedirect(url)
    )
    _set_language_cookie(request, response, language)
    return response


def _step_of_a_draft_gone(
    request: AuthenticatedHttpRequest, draft_id: Any, step: str
) -> HttpResponse:
    """A step sent without JavaScript for a draft discarded meanwhile (another tab): the 404
    page said Back showed what was typed, but a step is never cached (no-store), so Back asked
    again and got the 404 again (qa82). Answered instead with the step's fields as they were
    sent (a secret value empty, never sent back), saying the draft is gone and offering to
    save them as a new draft (wizard_recover). With htmx the step's 404 has wizard.js send the
    form again as a plain POST, answered here too. Still a 404: someone else's draft is answered the same
    way, with only what they sent themselves, so nothing says whether it exists."""
    post = request.POST
    language = str(post.get("action", "")).removeprefix("language-")
    if language in dict(settings.LANGUAGES):
        translation.activate(language)
        request.LANGUAGE_CODE = language
    draft = Draft(id=draft_id, owner=request.user, data={})
    state = W.wizard_state(draft)
    raw = W.raw_from_post(post, step)
    if step == W.BASIC:
        draft.data[W.BASIC] = raw
        state = W.wizard_state(draft)
    forms = W.pasted_secrets_hidden(
        W.webhook_secrets_hidden(W.bind(state, step, raw, show_errors=False))
    )
    context: dict[str, Any] = {
        "draft": draft,
        "state": state,
        "step": step,
        "step_title": W.STEP_TITLES[step],
        "step_template": f"jobs/wizard/_{step}.html",
        "forms": forms,
        "secrets_typed": W.secrets_typed(post, step),
        "create_key": uuid.uuid4().hex,
    }
    context.update(_STEP_EXTRAS[step](request, state, forms))
    response = render(request, "jobs/wizard/gone.html", context, status=404)
    if language in dict(settings.LANGUAGES):
        _set_language_cookie(request, response, language)
    return response


@post_only(lambda step: reverse("wizard-start"))
@login_required
def wizard_recover(request: AuthenticatedHttpRequest, step: str) -> HttpResponse:
    """另存为新草稿 on the page of a step whose draft was discarded (_step_of_a_draft_gone):
    a new draft with that step as typed, opened at that step when it may be (基础信息), else
    at its first step, saying what it holds."""
    if step not in W.FORM_STEPS:
        raise Http404
    draft = W.draft_recovered(
        owner=request.user,
        step=step,
        raw=W.raw_from_post(request.POST, step),
        create_key=str(request.POST.get("create_key", "")),
    )
    if W.step_allowed(draft, step):
        messages.success(request, _("Saved as a new draft. Check this step, then go on."))
        return redirect(_step_url(draft, step))
    # The steps before it say why they are empty and where the saved step is (_render_step).
    messages.success(request, _("Saved as a new draft."))
    return redirect(_step_url(draft, W.first_incomplete(draft)))


def _set_language_cookie(
    request: AuthenticatedHttpRequest, response: HttpResponse, language: str
) -> None:
    """Saved as Django's set_language saves it, and kept for the user's mails
    (jobs.languages), as the top bar's switch keeps it (jobs.accounts.set_language)."""
    language_chosen(user=request.user, language=language)
    language_cookie_set(response=response, language=language)


def _render_step(
    request: AuthenticatedHttpRequest,
    draft: Draft,
    step: str,
    *,
    forms: W.StepForms | None = None,
    stale: bool = False,
    overwrites: bool = False,
    secrets_typed: bool = False,
    checked: bool = False,
    fixing: bool = False,
) -> HttpResponse:
    state = W.wizard_state(draft)
    notice = STALE_STEP if stale else (STEP_SAVED_ELSEWHERE if overwrites else "")
    if overwrites and secrets_typed:
        notice = f"{notice} {SECRETS_TYPE_AGAIN}"
    context: dict[str, Any] = {
        "stale_notice": notice,
        "draft": draft,
        "state": state,
        "step": step,
        "step_title": W.STEP_TITLES[step],
        "step_number": W.STEPS.index(step) + 1,
        "step_url": _step_url(draft, step),
        "step_template": f"jobs/wizard/_{step}.html",
        "steps": (steps := _stepper(draft, step)),
        "has_prev": step != W.BASIC,
        "import_notices": I.import_notices(draft, step=step),
        "recovered_notice": _recovered_notice(draft, step),
    }
    if step == W.REVIEW:
        context.update(_review_context(state, step_urls={s["slug"]: s["url"] for s in steps}))
    else:
        forms = W.pasted_secrets_hidden(
            W.webhook_secrets_hidden(
                forms or W.step_forms_for_display(state, step, checked=checked)
            )
        )
        context["forms"] = forms
        context["seen"] = W.step_version(draft, step)
        context["checked"] = checked
        context["fixing"] = (fixing or checked) and W.fixing_allowed(draft)
        context.update(_STEP_EXTRAS[step](request, state, forms))
        if forms.show_errors:
            _autofocus_first_problem(forms)
    template = f"{STEP_TEMPLATE}#wizard-region" if request.htmx else STEP_TEMPLATE
    return render(request, template, context)


def _recovered_notice(draft: Draft, step: str) -> str:
    """What a step before the one saved from a discarded draft's page (W.RECOVERED_STEP) says:
    why it is empty, and that the saved step is waiting further on."""
    recovered = W.recovered_step_ahead(draft, step)
    if not recovered:
        return ""
    return _(
        "This draft was saved from the %(step)s page of a draft that had been discarded. The "
        "steps before %(step)s were in the discarded draft and are not in this one: fill them "
        "in again. What you typed on %(step)s is kept, and will be there when you reach it."
    ) % {"step": W.STEP_TITLES[recovered]}


def _autofocus_first_problem(forms: W.StepForms) -> None:
    """The first field with a problem gets the focus when the page loads, JavaScript or not
    (htmx also honours autofocus in what it swaps in)."""
    rows = list(forms.formset.forms) if forms.formset is not None else []
    for form in [forms.form, *rows]:
        for name, field in form.fields.items():
            if name in form.errors and not field.widget.is_hidden:
                field.widget.attrs["autofocus"] = True
                return


def _stepper(draft: Draft, current: str) -> list[dict[str, Any]]:
    """The steps' list: each step a link on the review, a button posting the step's form on
    the other steps (what is typed is saved on the way), or its title alone (the current
    step, and one not reached yet). Each decided here once rather than by three conditions
    per step in the template. Titles as text: a lazy one is translated again at each use.
    Only the review reverses the steps' addresses (eight reverse()s a page for nothing
    elsewhere)."""
    review = current == W.REVIEW
    # Steps tried and found wrong, not passed since (W._mark): marked 需修改 (qa115: a step
    # left with a problem, by a stepper press or a refused 保存并返回确认, showed no sign of it).
    attempted = draft.data.get("_attempted") or []
    steps = []
    for i, slug in enumerate(W.STEPS):
        allowed = W.step_allowed(draft, slug)
        reachable = allowed and slug != current
        steps.append(
            {
                "slug": slug,
                "number": i + 1,
                "title": str(W.STEP_TITLES[slug]),
                "url": _step_url(draft, slug) if review else "",
                "current": slug == current,
                "done": slug in draft.completed_steps,
                "needs_changes": slug in attempted and slug not in draft.completed_steps,
                "disabled": not allowed,
                "link": reachable and review,
                "button": reachable and not review,
            }
        )
    return steps


def _basic_extras(
    request: AuthenticatedHttpRequest, state: W.WizardState, forms: W.StepForms
) -> dict[str, Any]:
    forms.form.fields["resource_pool"].widget.attrs["hx-get"] = reverse(
        "wizard-queues", args=[state.draft.id]
    )
    raw = state.raw(W.BASIC)
    return {
        "aiak": _aiak_preview(raw, state.pool, staff=request.user.is_staff),
        "aiak_form": forms.form,
        "max_labels": S.MAX_LABELS,
    }


def _aiak_preview(raw: W.Raw | Any, pool: W.Pool | None, *, staff: bool) -> dict[str, Any]:
    def one(key: str) -> str:
        value = raw.get(key)
        if isinstance(value, list):
            return str(value[-1]) if value else ""
        return str(value or "")

    template = W.aiak_templates().get(one("aiak_template"))
    misfit = W.template_misfit(template, pool) if template else None
    return {
        "on": one("creation_mode") == S.CREATION_AIAK,
        "template": template,
        # Its card as a person names it, the resource in brackets (S.card_shown).
        "card": S.card_shown(template["resources"]["acceleratorType"]) if template else "",
        "command": W.template_command(template, one("training_mode"), one("training_method"))
        if template
        else "",
        "misfit": misfit,
        "misfit_message": W.misfit_message(misfit) if misfit else "",
        # Staff can give the local pool more cards (README, "Running jobs on this machine").
        "more_local_cards": bool(
            misfit and misfit["none_fits"] and staff and pool and pool.backend == "local"
        ),
    }


def _image_extras(
    request: AuthenticatedHttpRequest, state: W.WizardState, forms: W.StepForms
) -> dict[str, Any]:
    recent = (
        Job.objects.filter(owner=request.user)
        .order_by("-created_at")
        .values_list("spec__jobSpec__image", flat=True)[:20]
    )
    images = list(
        dict.fromkeys([i for i in recent if isinstance(i, str) and i] + W.preset_images())
    )
    secrets = W.plain_secret_warnings(state=state)
    # 查看示例 open on an example: asked for by the address (?example=, the panel's button
    # without JavaScript), or sent with the step's form (the panel's hidden `example`) by a row
    # button or a refused 下一步, which draw the step again: the panel stays as it was.
    shown = W.shown_example(request.GET) or W.shown_example(request.POST)
    left = W.paste_lines_left(str(forms.form["env_paste"].value() or ""))
    return {
        "images": images,
        # Each env table row with the warnings of secrets in plain text on its value, and how
        # many lines of its name the paste box still holds (not used: the row keeps its first).
        "env_rows": [
            (row, secrets.rows.get(i, []), left.get(str(row["name"].value() or "").strip(), 0))
            for i, row in enumerate(forms.formset.forms)
        ],
        "entrypoint_secrets": secrets.entrypoint,
        "command_secrets": secrets.command,
        "examples": W.offered_examples(state.pool),
        "example": _example(shown or state.framework, state.pool),
        "example_open": bool(shown),
        "injected": W.injected_variables(state.framework, state.pool),
        "aiak_refill": state.draft.data.get(W.AIAK_REFILL) if state.template else None,
    }


def _example(wanted: str, pool: W.Pool | None) -> dict[str, Any]:
    """The example of that id offered on `pool`, else a framework's first example there
    (MPIJob: OpenMPI's; Custom on Kubernetes: its own Ray example, left31: torchrun's, whose
    MASTER_ADDR a custom job does not get)."""
    examples = W.offered_examples(pool)
    return next(
        (e for e in examples if e["id"] == wanted),
        next((e for e in examples if e["framework"] == wanted), examples[0]),
    )


def _resources_extras(
    request: AuthenticatedHttpRequest, state: W.WizardState, forms: W.StepForms
) -> dict[str, Any]:
    rows = []
    freshness = W.pool_freshness(state.pool)
    for i, row in enumerate(forms.formset.forms):
        card = str(row["accelerator_type"].value() or "")
        gpu = bool(row["use_accelerator"].value())
        per = W.parse_int(row["accelerators"].value()) if gpu else 0
        instances = W.parse_int(row["replicas"].value())
        rows.append(
            {
                "form": row,
                "index": i,
                "idle": _idle_info(state.pool, card if gpu else "", per * instances, freshness),
            }
        )
    local = state.pool is not None and state.pool.backend == "local"
    quota = quota_lines(request.user) if local else []
    return {
        "rows": rows,
        # The same sum the totals partial makes from the browser's current table.
        "totals": W.card_totals(W.rows_of(_lists(forms.formset.data), "roles")),
        "totals_left_out": W.card_rows_left_out(W.rows_of(_lists(forms.formset.data), "roles")),
        "freshness": freshness,
        "custom": state.framework == S.CUSTOM,
        "roles_restored": S.FRAMEWORK_LABELS.get(W.roles_restored(state), ""),
        "card_types": state.pool.accelerators if state.pool else [],
        "note": state.pool.note if state.pool else "",
        "queues_held": W.queues_held(state.pool, viewer=request.user),
        # The user's quota beside the idle cards, where the cards are chosen (QA 63: it was
        # first told on Next, as a refusal).
        "quota": quota,
        "quota_over_note": over_quota_note(quota),
    }


def _lists(data: Any) -> W.Raw:
    """A form's data (a MultiValueDict, or {} when nothing was posted) as {name: values}."""
    return dict(data.lists()) if hasattr(data, "lists") else {}


def _idle_info(
    pool: W.Pool | None, card: str, wanted: int, freshness: W.Freshness | None
) -> dict[str, Any]:
    idle = W.idle_for(pool, card)
    return {
        "card": card,
        "idle": idle,
        "wanted": wanted,
        # A count out of range has its own message on the row; no shortfall made of it.
        "short": idle is not None
        and idle < wanted <= S.MAX_REPLICAS * S.MAX_ACCELERATORS_PER_REPLICA,
        "freshness": freshness,
    }


def _data_extras(
    request: AuthenticatedHttpRequest, state: W.WizardState, forms: W.StepForms
) -> dict[str, Any]:
    types = state.pool.storage_types if state.pool else []
    for i, row in enumerate(forms.formset.forms):
        _follow_type(row, state.draft.id, i)
    return {
        "rows": list(enumerate(forms.formset.forms)),
        "node_disk": W.node_disk(state.pool, "hostpath"),
        "bos": "bos" in types,
        # Seed 000 offers 本地盘 or PFS: a pool without PFS says why it is not in the list.
        "no_pfs": state.pool is not None and not any(t.startswith("pfs") for t in types),
        "local_pool": state.pool is not None and state.pool.backend == "local",
        # The local pool may offer this user no volume at all (LOCAL_VOLUMES "@group").
        "no_volume": state.pool is not None
        and state.pool.backend == "local"
        and not state.pool.volumes_of("hostpath"),
    }


def _follow_type(row: F.MountForm, draft_id: Any, index: int) -> None:
    """Switching a mount row's storage type redraws the row (its volume choices follow the
    type); without JavaScript 下一步 does it (MountForm)."""
    redraw = {
        "hx-get": f"{reverse('wizard-mount-row', args=[draft_id])}?row={index}",
        "hx-include": "closest tr",
        "hx-target": "closest tr",
        "hx-swap": "outerHTML",
        # The last choice is the one drawn: its request replaces one still on its way (a slow
        # network). Else it waited behind it and was dropped once the row had been redrawn
        # from the choice before, which it showed as made (qa71).
        "hx-sync": "closest tr:replace",
    }
    row.fields["type"].widget.attrs.update(redraw)
    # ...and choosing a volume read-only for everyone redraws it with 只读 forced and why.
    if row.read_only_volumes:
        row.fields["name"].widget.attrs.update(redraw)


def _fault_extras(
    request: AuthenticatedHttpRequest, state: W.WizardState, forms: W.StepForms
) -> dict[str, Any]:
    spec = W.assemble(state, steps=[W.RESOURCES]).spec
    conditions = S.bccl_conditions(spec)
    labels = {
        "instances": _("At least 2 replicas"),
        "whole_node": _("8 cards per replica"),
        "rdma": _("RDMA on"),
        "card_type": _("A800 or HPAS cards"),
    }
    if state.framework != S.PYTORCH:
        # Fault tolerance restarts PyTorch jobs only: offered only when it can work.
        fields = forms.form.fields
        for name in ("fault_tolerance", "retry_limit", "custom_patterns"):
            fields[name].widget.attrs["disabled"] = True
        fields["fault_tolerance"].help_text = _(
            "Fault tolerance restarts PyTorch jobs only; this is a %(framework)s job."
        ) % {"framework": S.FRAMEWORK_LABELS.get(state.framework, state.framework)}
    # After the help texts are set: reading its errors draws every field (their help as then).
    bccl = forms.form["enable_bccl"]
    # Read with the four conditions (and why it is off), its problem first (jobs.form_rendering).
    described = [f"{bccl.auto_id}_error"] if bccl.errors else []
    described += [f"{bccl.auto_id}_helptext", "bccl-conditions"]
    if not all(conditions.values()):
        # Offered only when all four hold. Off, yet reachable by Tab so that a keyboard user
        # hears why (qa84: `disabled` took it out of the Tab order): aria-disabled, and
        # wizard.js refuses to tick it; sent ticked all the same, the step refuses it
        # (spec._validate_bccl). The step drawn as saved shows it unticked: a box ticked
        # before the conditions changed was not sent while it was disabled, and so turned off
        # at 下一步; unticked, it still is.
        bccl.field.widget.attrs["aria-disabled"] = "true"
        described.append("bccl-off")
        form = forms.form
        if not form.is_bound:
            form.initial["enable_bccl"] = False
        elif request.method == "GET":
            form.data = form.data.copy()
            form.data.pop(form.add_prefix("enable_bccl"), None)
    bccl.field.widget.attrs["aria-describedby"] = " ".join(described)
    return {
        "bccl": [(labels[k], ok) for k, ok in conditions.items()],
        "bccl_ok": all(conditions.values()),
    }


def _advanced_extras(
    request: AuthenticatedHttpRequest, state: W.WizardState, forms: W.StepForms
) -> dict[str, Any]:
    form = forms.form
    code_path = W.command_tensorboard_path(state)
    if isinstance(form, F.AdvancedForm) and W.ADVANCED not in state.draft.data and code_path:
        # Said where it shows: the switch and path were not the engineer's own (W.default_raw).
        # Escaped: crispy draws a help text as HTML, and the path is the engineer's typing.
        field = form.fields["tensorboard_path"]
        field.help_text = S.sentences(
            _(
                "Filled in from the command's TENSORBOARD_PATH=%(path)s (step Image and "
                "command), where the AIAK template's code writes its TensorBoard files."
            )
            % {"path": conditional_escape(code_path)},
            field.help_text,
        )
    if state.pool is not None and state.pool.backend == "aihc" and isinstance(form, F.AdvancedForm):
        # The events the step shows (as saved, or as sent by a refused 下一步) against step
        # 5 as saved: a warning on the field while it holds them, as the review says it.
        # Step 5 alone is bound again: this step's form is bound already, and step 1's (its
        # pools and queues) would cost the page more than all the rest of this (review52).
        spec = W.assemble(state, steps=[W.FAULT]).spec
        spec.framework = state.framework
        # Drawn whenever the event would get it, and shown while the event is ticked: in the
        # step as drawn (bound, as a refused 下一步 sent it; else as saved), then as the box is
        # ticked or unticked (wizard.js). Until left54 it was drawn for the saved events only.
        spec.alert.items = ["jobFT"]
        fault_step = conditional_escape(W.STEP_TITLES[W.FAULT])
        warning = W.fault_tolerance_alert_unsent(
            spec, backend=state.pool.backend, fault_step=fault_step
        )
        if warning:
            ticked = "jobFT" in (form["alert_items"].value() or [])
            form.alert_warning_said(warning, shown=ticked)
    return {}


def _submission_extras(
    request: AuthenticatedHttpRequest, state: W.WizardState, forms: W.StepForms
) -> dict[str, Any]:
    # The basic step for the queue and priority the note on a held queue reads.
    spec = W.assemble(state, steps=[W.BASIC, W.RESOURCES, W.SUBMISSION]).spec
    return {
        "shortfall": W.shortfall(spec, state.pool),
        "wanted": sorted(spec.accelerators_by_type().items()),
        "freshness": W.pool_freshness(state.pool),
        "quota_waits": _quota_waits(spec, state),
        # Its queue held by a job that does not fit: what the idle cards above do not say.
        "queue_held": W.queue_held_for(spec, state.pool, viewer=request.user),
    }


def _quota_waits(spec: S.JobSpec, state: W.WizardState) -> list[str]:
    """A queue task waits for its owner's own jobs; a standalone one is refused instead."""
    if spec.submission.mode != S.SUBMIT_QUEUE:
        return []
    return W.quota_waits(spec, state.pool, state.draft.owner)


_STEP_EXTRAS = {
    W.BASIC: _basic_extras,
    W.IMAGE: _image_extras,
    W.RESOURCES: _resources_extras,
    W.DATA: _data_extras,
    W.FAULT: _fault_extras,
    W.ADVANCED: _advanced_extras,
    W.SUBMISSION: _submission_extras,
}


def _review_context(state: W.WizardState, *, step_urls: dict[str, str]) -> dict[str, Any]:
    """`step_urls`: each step's address, as the stepper has them (reversed once a page)."""
    assembly = W.assemble(state)
    spec = assembly.spec
    problems = W.review_problems(state, assembly)
    api_request, body, curl = W.request_preview(spec, state.pool)
    draft = state.draft
    # The review policy would hold it: say so before the submit, not only after it.
    held = review_reason(spec=spec)
    # The pools by name, as the admin's job page names them: one no longer offered (a copy of
    # a job in a retired pool) by its last known name, marked so, in one query for the
    # sections and the diff together; none while both pools are offered.
    source = draft.source_job
    pool_names = spec_pool_names(
        names={p.id: p.name for p in state.pools},
        pool_ids={spec.resource_pool_id, *([source.resource_pool] if source else [])},
    )
    return {
        "spec": spec,
        "review_notice": display_text(held, source_of(held)) if held else "",
        "tensorboard_notice": W.tensorboard_path_private(spec, state.pool),
        "group_env_notice": W.group_env_pinned(spec),
        "shared_memory_notice": W.shared_memory_over_memory(spec),
        "framework_notice": W.command_of_another_framework(spec),
        "alert_notice": W.fault_tolerance_alert_unsent(
            spec,
            backend=state.pool.backend if state.pool else "",
            # Step 5 as a link, as the review's other notices link their step, to the 容错
            # switch the warning names (qa79: it landed on the top of the step). The browser
            # focuses a fragment's target that takes focus, a checkbox too, as the page
            # loads (HTML's "scroll to the fragment"): no script needed (test_alerts_browser).
            fault_step=format_html(
                '<a href="{}#id_fault_tolerance" class="alert-link">{}</a>',
                step_urls[W.FAULT],
                W.STEP_TITLES[W.FAULT],
            ),
        ),
        "plain_secrets": W.plain_secret_warnings(state=state, assembly=assembly).all(),
        "image_step_url": step_urls[W.IMAGE],
        "problems": [
            {
                "step": loc.step,
                "title": W.STEP_TITLES[loc.step],
                # The step opens with its messages shown, also when it is marked done.
                "url": step_urls[loc.step] + (CHECKED_QUERY if loc.step != W.REVIEW else ""),
                "message": message,
            }
            for loc, message in problems
        ],
        "api_request": api_request,
        "body": body,
        "curl": curl,
        "group_request_note": W.group_request_note(spec, state.pool),
        "console_api_note": W.console_api_request_note(
            state.pool.backend if state.pool else "local"
        ),
        "roles_request_note": W.roles_request_note(
            spec, state.pool.backend if state.pool else "local"
        ),
        "environments": W.environment_preview(spec, state.pool),
        "environments_hidden": W.environments_hidden(spec),
        "mpi_hostfile": W.mpi_hostfile_preview(spec, state.pool.backend if state.pool else "local"),
        "wanted": [
            (card, n, W.idle_for(state.pool, card))
            for card, n in sorted(spec.accelerators_by_type().items())
        ],
        "shortfall": W.shortfall(spec, state.pool),
        "quota_waits": _quota_waits(spec, state),
        "diff": (
            W.spec_diff(source, spec, pool_names=pool_names, task=W.copied_task(draft) is not None)
            if source
            else None
        ),
        "task_copy_note": W.task_copy_note(draft, spec),
        "source_deleted": W.copied_from_deleted(draft),
        # The admin's reading of a spec, one section per form step, each with its edit link.
        "sections": [
            (title, rows, step, step_urls[step] + FIXING_QUERY)
            for (title, rows), step in zip(
                spec_sections(
                    spec,
                    pool_name=pool_names.get(spec.resource_pool_id, ""),
                    # What the advanced step offered on this pool (a pool no longer offered:
                    # every setting, as it is not known).
                    alert_rule_offered=state.pool is None or state.pool.backend == "aihc",
                    privileged_offered=state.pool is None or state.pool.privileged,
                ),
                W.FORM_STEPS,
                strict=True,
            )
        ],
        "freshness": W.pool_freshness(state.pool),
        "revision": _revision(state.draft),
    }


# A review problem's link: the step it opens checks itself and shows what the review found
# (W.step_forms_for_display), which a step marked done does not otherwise do.
CHECKED_QUERY = "?check=1"
# A step reached from such a step (上一步, a stepper link): no messages of its own, but the way
# straight back to the review, 保存并返回确认 (wizard.step_post's `to-review`).
FIXING_QUERY = "?fixing=1"

STALE_STEP = gettext_lazy(
    "Basic info was changed in another tab or window after this page was shown, so what you "
    "sent here was not saved. The step now shows the draft as it is: check it and go on."
)
STEP_SAVED_ELSEWHERE = gettext_lazy(
    "This step was saved in another tab or window after this page was shown, so what you "
    "sent was not saved over it. The form below still shows what you typed: press the same "
    "button again to save it instead, or reload the page to see the other version."
)
STEP_KEPT_ACROSS_LOGIN = gettext_lazy(
    "Your log-in had ended when this step was sent; what you typed on it was kept and has now "
    "been sent again."
)
SECRETS_TYPE_AGAIN = gettext_lazy(
    "The secret values you typed are never shown again: type them again before you press it."
)
STALE_REVIEW = gettext_lazy(
    "The draft was changed in another tab or window after this review was shown. Nothing was "
    "submitted; here is the review of the draft as it is now."
)

DRAFT_SUBMITTED_ELSEWHERE = gettext_lazy(
    "This draft had already been submitted (in another tab or window), so what this page sent "
    "was not saved. Here is its job; to change it, copy the job."
)
DRAFT_SUBMITTED_BEFORE = gettext_lazy(
    "This draft had already been submitted (Submit pressed again: in another tab or window, or "
    "a double click), so it was not submitted again: this is the job it made."
)
DRAFT_SPENT = gettext_lazy(
    "This draft was submitted and its job has been deleted since, so nothing was submitted "
    "again. To run it again, copy a job or create a new one."
)


def _redirect(request: AuthenticatedHttpRequest, url: str) -> HttpResponse:
    """A redirect htmx follows as a whole-page visit (a form region must not get a page)."""
    return HttpResponseClientRedirect(url) if request.htmx else redirect(url)


def _revision(draft: Draft) -> str:
    """Which version of the draft a page showed: it changes with every save."""
    return draft.updated_at.isoformat()


@post_only(lambda draft_id: reverse("wizard-step", args=[draft_id, W.REVIEW]))
@login_required
def wizard_submit(request: AuthenticatedHttpRequest, draft_id: Any) -> HttpResponse:
    draft = _draft(request, draft_id)
    revision = request.POST.get("revision")
    if draft.submitted_at is None and revision is not None and revision != _revision(draft):
        # The review shown was not the draft as it is now (changed in another tab): submit
        # only what the person has seen.
        messages.warning(request, STALE_REVIEW)
        return redirect(_step_url(draft, W.REVIEW))
    # Submitted before this request (another tab's 提交, a Back to the review): its job opens,
    # said to be the one submitted then, not a new one.
    submitted_before = draft.submitted_at is not None
    try:
        jobs = W.draft_submit(draft=draft)
    except W.DraftSpentError:
        messages.info(request, DRAFT_SPENT)
        return _redirect(request, reverse("job-list"))
    except W.DraftChangedError:
        messages.warning(request, STALE_REVIEW)
        return redirect(_step_url(draft, W.REVIEW))
    except W.WizardError:
        messages.error(
            request, _("The job cannot be submitted yet; fix the problems listed below.")
        )
        return redirect(_step_url(draft, W.REVIEW))
    if submitted_before:
        messages.info(request, DRAFT_SUBMITTED_BEFORE)
    else:
        messages.success(request, _submitted_message(jobs))
    return _redirect(request, reverse("job-detail", args=[jobs[0].public_id]))


def _submitted_message(jobs: list[Job]) -> str:
    """What the job page says once the wizard has submitted: the wizard is gone, and the
    page it opens must say that the job now exists (and, when held, what it waits for)."""
    first = jobs[0]
    if len(jobs) > 1:
        said = ngettext(
            "Queue group %(name)s submitted: %(count)d task.",
            "Queue group %(name)s submitted: %(count)d tasks.",
            len(jobs),
        ) % {"name": first.name, "count": len(jobs)}
    else:
        said = _("Job %(name)s submitted.") % {"name": first.name}
    if first.status == JobStatus.PENDING_REVIEW:
        said += " " + _("It waits for a reviewer's approval before it runs.")
    return said


@post_only(lambda public_id: reverse("job-detail", args=[public_id]))
@login_required
def job_copy(request: AuthenticatedHttpRequest, public_id: str) -> HttpResponse:
    if "\x00" in public_id:  # never in a job id, and PostgreSQL refuses it in a query
        raise Http404
    job = get_object_or_404(Job, public_id=public_id, owner=request.user)
    # Copy this task & edit (a queue group's task's page): that task alone, as it ran.
    task = W.task_copied(job) if request.POST.get("task") == "1" else None
    try:
        draft = W.draft_from_job(job=job, owner=request.user, task=task is not None)
    except S.SpecError as exc:
        messages.error(
            request,
            _("This job's stored spec cannot be read (fields: %(fields)s), so it cannot be copied.")
            % {"fields": exc.fields},
        )
        return redirect("job-detail", job.public_id)
    if job.resource_pool == LOCAL_POOL_ID and (
        refused := volume_refusals(spec=job.job_spec(), owner=request.user)
    ):
        # The copy keeps every row as it was; the data step says which to change.
        messages.warning(
            request,
            _(
                "This job mounts volumes you may no longer mount as it did: %(problems)s "
                "Change those rows on step 4 (data) before you submit the copy."
            )
            % {"problems": " ".join(m for found in refused.values() for m in found)},
        )
    messages.info(
        request,
        _(
            "This is a copy of job %(name)s, saved as a new draft: change what you need and "
            "submit it as a new job. The job itself is left as it is; the last step lists "
            "what differs from it."
        )
        % {"name": job.name},
    )
    group = job.group if job.group_id is not None else None
    if task is not None:
        messages.info(
            request,
            _(
                "The draft is of task %(number)d/%(total)d alone, as one queue task, with "
                "AIHC_GROUP_TASK_INDEX=%(index)d and AIHC_GROUP_TASK_TOTAL=%(total)d in its "
                "envs, as that task ran with them."
            )
            % {"number": task[0] + 1, "index": task[0], "total": task[1]},
        )
    elif group is not None and group.total > 1:
        # One task of a queue group copies the group: its spec holds the group's submission
        # settings, which the wizard's Submission step shows to change (to one task, say).
        # Run again is the way to run the one task (jobs.actions.job_rerun). A group of one
        # (a queue task sent alone) is copied as it is, with nothing to say.
        messages.info(
            request,
            ngettext(
                "The draft is of its whole queue group: %(total)d task, at most "
                "%(concurrency)d at once. Change that in the Submission step.",
                "The draft is of its whole queue group: %(total)d tasks, at most "
                "%(concurrency)d at once. Change that in the Submission step.",
                group.total,
            )
            % {"total": group.total, "concurrency": group.concurrency},
        )
    return redirect(_step_url(draft, W.BASIC))


# -- partials ---------------------------------------------------------------------------


@require_safe
@login_required
def wizard_queues(request: AuthenticatedHttpRequest, draft_id: Any) -> HttpResponse:
    _draft_id_only(request, draft_id)
    pool = W.find_pool(request.GET.get("resource_pool", ""))
    queues = pool.queues if pool else []
    return render(
        request,
        "jobs/wizard/_basic.html#queue-options",
        {"queues": queues, "selected": "default" if "default" in queues else ""},
    )


@require_safe
@login_required
def wizard_aiak(request: AuthenticatedHttpRequest, draft_id: Any) -> HttpResponse:
    request_draft = _draft_id_only(request, draft_id)
    # The pool only matters to a chosen template (does it fit?): no lookup without one.
    template_chosen = bool(request.GET.get("aiak_template"))
    pool = W.find_pool(request.GET.get("resource_pool", "")) if template_chosen else None
    context = {
        "aiak": _aiak_preview(request.GET, pool, staff=request.user.is_staff),
        "draft": request_draft,
    }
    # The preview alone, for the mode switch too: the fields are drawn on the page already,
    # shown by CSS in AIAK mode (fix82b; until then the switch redrew them, taking what was
    # chosen in them while its answer was on its way, and this drew them with a form of
    # their own, forms.AiakFieldsForm).
    return render(request, "jobs/wizard/_basic.html#aiak-preview", context)


@require_safe
@login_required
def wizard_idle(request: AuthenticatedHttpRequest, draft_id: Any) -> HttpResponse:
    """The live "idle N cards" beside a role's card type, polled every few seconds."""
    row = W.parse_int(request.GET.get("row"))
    prefix = f"roles-{row}-"
    pool = W.find_pool(_draft_pool_id(request, draft_id))
    gpu = bool(request.GET.get(prefix + "use_accelerator"))
    card = request.GET.get(prefix + "accelerator_type", "") if gpu else ""
    wanted = W.parse_int(request.GET.get(prefix + "accelerators")) * W.parse_int(
        request.GET.get(prefix + "replicas")
    )
    freshness = W.pool_freshness(pool)
    response = render(
        request,
        "jobs/wizard/_resources.html#idle-count",
        {"info": _idle_info(pool, card, wanted, freshness)},
    )
    if row == 0 and request.htmx:
        # The first row's poll also refreshes the pool's stock line above the table, so its
        # figures and their age do not stay as the page was first drawn.
        stock = render(
            request,
            "jobs/wizard/_resources.html#pool-stock",
            {
                "card_types": pool.accelerators if pool else [],
                "freshness": freshness,
                "note": pool.note if pool else "",
                "queues_held": W.queues_held(pool, viewer=request.user),
                "oob": True,
            },
        )
        response.content += stock.content
    return response


@require_safe
@login_required
def wizard_totals(request: AuthenticatedHttpRequest, draft_id: Any) -> HttpResponse:
    """The role table's cards per type, recomputed from the table as the user edits it."""
    draft = _draft_id_only(request, draft_id)
    rows = W.rows_of(_lists(request.GET), "roles")
    return render(
        request,
        "jobs/wizard/_resources.html#card-totals",
        {
            "totals": W.card_totals(rows),
            "totals_left_out": W.card_rows_left_out(rows),
            "draft": draft,
        },
    )


@require_safe
@login_required
def wizard_example(request: AuthenticatedHttpRequest, draft_id: Any) -> HttpResponse:
    # 404 unless the user's draft; its pool decides what is offered (W.offered_examples), and
    # the panel's links need its id alone.
    pool = W.find_pool(_draft_pool_id(request, draft_id))
    return render(
        request,
        "jobs/wizard/_image.html#example-panel",
        {
            "draft": Draft(id=draft_id),
            "examples": W.offered_examples(pool),
            "example": _example(request.GET.get("example", ""), pool),
            "example_open": True,  # asked for by a button inside the open panel
        },
    )


@require_safe
@login_required
def wizard_mount_row(request: AuthenticatedHttpRequest, draft_id: Any) -> HttpResponse:
    """A mount row redrawn after its storage type changed: that type's volumes to choose
    (its only one chosen), and what was typed in the row kept."""
    # 404 unless the user's draft; only the volumes the user may mount (jobs.volume_access).
    pool = pool_for_user(pool=W.find_pool(_draft_pool_id(request, draft_id)), user=request.user)
    index = min(W.parse_int(request.GET.get("row")), F.MAX_ROWS - 1)
    prefix = f"mounts-{index}"
    row = request.GET.copy()
    if pool is not None:
        row[f"{prefix}-name"] = pool.volume_for(
            row.get(f"{prefix}-type", ""), row.get(f"{prefix}-name", "")
        )
    form = F.MountForm(row, prefix=prefix, pool=pool)
    _follow_type(form, draft_id, index)
    return render(
        request,
        "jobs/wizard/_data.html#mount-row",
        {"i": index, "row": form, "show_errors": False},
    )
