// Behaviour shared by every page. No inline scripts anywhere: the CSP forbids them.
"use strict";

// The language switch returns to the page as it is now (on a wizard step the buttons belong
// to the step's form instead, which saves what was typed first; see step.html).
document.addEventListener("submit", (event) => {
  const form = event.target;
  if (!(form instanceof HTMLFormElement) || !form.hasAttribute("data-language-switch")) return;
  form.elements.next.value = window.location.pathname + window.location.search;
});

// 中文/EN loads the page again in the other language, and focus was left on the page itself: a
// keyboard user started again from its top, and a screen reader said nothing of where they
// were (qa104). The language pressed is kept for the page that comes back (this tab only),
// which puts focus on its switch, pressed now. On a wizard step or the drafts page the buttons
// post the step's or the import's form (see below), and the page comes back the same way.
const LANGUAGE_SWITCHED = "console.languageSwitched";
document.addEventListener(
  "submit",
  (event) => {
    const button = event.submitter;
    if (!button || !button.hasAttribute("data-language")) return;
    try {
      sessionStorage.setItem(LANGUAGE_SWITCHED, button.dataset.language);
    } catch (e) {
      /* storage blocked: focus starts at the top, as before */
    }
  },
  true,
);
document.addEventListener("DOMContentLoaded", () => {
  let language = null;
  try {
    language = sessionStorage.getItem(LANGUAGE_SWITCHED);
    sessionStorage.removeItem(LANGUAGE_SWITCHED);
  } catch (e) {
    return;
  }
  if (!language) return;
  // Only when the switch took: a page that came back in the same language (the request
  // failed, and this is a later page) leaves focus alone.
  const pressed = document.querySelector(
    `button[data-language="${CSS.escape(language)}"][aria-pressed="true"]`,
  );
  if (pressed) pressed.focus();
});

// On the drafts page the language buttons belong to the import form (form=, see start.html):
// they post it as a plain form, not through its htmx, so the whole page (navigation bar
// included) comes back in the other language with the paste kept. Stopped on its way down,
// before htmx's own listener on the form sees it.
document.addEventListener(
  "submit",
  (event) => {
    const form = event.target;
    const button = event.submitter;
    if (!(form instanceof HTMLFormElement) || form.id !== "import-form") return;
    if (button && button.hasAttribute("data-language")) event.stopPropagation();
  },
  true,
);

// A mount row's volume: a long name or path is shortened in the middle in the list (whole in
// each option's title, jobs.forms.VolumeSelect), and the one chosen is written out in full
// under it. Without JavaScript the page shows it once the step is drawn again (下一步).
document.addEventListener("change", (event) => {
  const select = event.target;
  if (!(select instanceof HTMLSelectElement) || !select.dataset.volumeFull) return;
  const full = document.getElementById(select.dataset.volumeFull);
  if (!full) return;
  const option = select.selectedOptions[0];
  full.textContent = option ? option.title : "";
  full.hidden = !full.textContent;
});

// A form that destroys something asks first (data-confirm holds the question). Without
// JavaScript the server asks instead, on a page of its own.
// Once answered it is on its way: tapped again before the answer comes (a slow network, where
// nothing seems to happen), it is neither asked nor sent again (qa45: Stop tapped twice sent
// two, and the second's answer, "already finished or is stopping", was all the person saw).
// Back to the page (the browser's cache) it can be used again.
document.addEventListener("submit", (event) => {
  const form = event.target;
  if (!(form instanceof HTMLFormElement) || !form.dataset.confirm) return;
  if (form.hasAttribute("data-sent") || !window.confirm(form.dataset.confirm)) {
    event.preventDefault();
    return;
  }
  form.setAttribute("data-sent", "");
  // Asked and answered here: the server need not ask again on a page of its own (which is
  // how it asks when JavaScript is off).
  if (!form.elements.confirmed) {
    const confirmed = document.createElement("input");
    confirmed.type = "hidden";
    confirmed.name = "confirmed";
    confirmed.value = "1";
    form.appendChild(confirmed);
  }
});

window.addEventListener("pageshow", () => {
  document.querySelectorAll("form[data-sent]").forEach((form) => form.removeAttribute("data-sent"));
});

// Stop / Delete selected's question is the answer to a POST: Back after the jobs were stopped or
// deleted showed it again from the browser's history, asking to stop or delete jobs that were
// gone, their statuses as they were then (qa65). Shown that way, it says so and its button is
// switched off; its link returns to the list with the jobs still ticked, where those gone are
// counted as no longer existing. Drawn by the server (the first time, or sent again) it is as it was.
window.addEventListener("pageshow", (event) => {
  const form = document.getElementById("bulk-confirm-form");
  if (!form) return;
  const [navigation] = performance.getEntriesByType("navigation");
  if (!event.persisted && !(navigation && navigation.type === "back_forward")) return;
  document.getElementById("bulk-stale").hidden = false;
  form.querySelectorAll("button[type=submit]").forEach((button) => {
    button.disabled = true;
  });
});

// The job list's search, queue and label boxes, as they are typed or pasted: text copied from
// a chat or a web page (a non-breaking or zero-width space at its end) or typed with a Chinese
// input method's full-width letters and spaces (ｅｘｐ－０１, 　) looks right, yet the browser's
// check of the box (its pattern) refused it, "Please match the requested format", and nothing
// was searched (qa65). Made plain as the server reads it too (jobs.spec.plain_typed): full-width
// as ASCII (NFKC), any space as a space, the invisible characters dropped; not while a
// character is being composed, and the caret kept where it was.
const INVISIBLE_TYPED = /[\u200b\u200c\u200d\u2060\ufeff]/gu;
function plainTyped(text) {
  return text.normalize("NFKC").replace(INVISIBLE_TYPED, "").replace(/\s/gu, " ");
}
function makePlain(event) {
  const box = event.target;
  if (!(box instanceof HTMLInputElement) || !box.hasAttribute("data-plain-typed")) return;
  if (event.isComposing) return;
  const plain = plainTyped(box.value);
  if (plain === box.value) return;
  const caret = plainTyped(box.value.slice(0, box.selectionStart ?? box.value.length)).length;
  box.value = plain;
  box.setSelectionRange(caret, caret);
}
document.addEventListener("input", makePlain);
document.addEventListener("compositionend", makePlain);

// The job list's "select all on this page" box ticks or clears every row's box, and shows
// whether all, some or none are ticked, also after a poll has brought new rows (the ticked
// boxes themselves survive a poll: hx-preserve). Ticked, it sends "all": every row shown.
function syncSelectAll(form) {
  const all = form.querySelector("#select-all");
  if (!all) return;
  const rows = Array.from(form.querySelectorAll("input[type=checkbox][name=jobs]"));
  const ticked = rows.filter((row) => row.checked).length;
  all.checked = rows.length > 0 && ticked === rows.length;
  all.indeterminate = ticked > 0 && ticked < rows.length;
}
document.addEventListener("change", (event) => {
  const box = event.target;
  if (!(box instanceof HTMLInputElement) || !box.form || box.form.id !== "bulk-form") return;
  if (box.id === "select-all") {
    box.form.querySelectorAll("input[type=checkbox][name=jobs]").forEach((row) => {
      row.checked = box.checked;
    });
  }
  syncSelectAll(box.form);
});
// A refresh does not carry the selection (its boxes come unticked), so a row it brings onto
// this page (a job ticked on another page, moved here as rows above it ended or were deleted)
// is ticked again from the bar, which names every job selected; else its unticked box dropped
// it from the selection without a word (qa40).
function tickSelectedRows(form) {
  const list = form.querySelector("#selection-jobs");
  if (!list) return;
  form.querySelectorAll("input[type=checkbox][name=jobs]").forEach((box) => {
    if (!box.checked && list.querySelector(`.selection-job[data-job="${CSS.escape(box.value)}"]`)) {
      box.checked = true;
    }
  });
}
document.addEventListener("htmx:afterSettle", () => {
  const form = document.getElementById("bulk-form");
  if (!form) return;
  tickSelectedRows(form);
  syncSelectAll(form);
});

// The job list's refresh does not move rows under the mouse: while it is over the table, a
// refresh that would put other jobs where they are (a job above ended under a status filter,
// a new one came in, one was deleted elsewhere) is not swapped in, so the box or link aimed at
// is still that job's when clicked (qa40: a team lead ticking jobs on ?status=running ticked
// the next job down as the one above finished). Polling goes on; the first refresh after the
// mouse has left brings the new rows. One that only changes statuses is swapped in at once.
let pointerOnJobTable = false;
document.addEventListener("pointerover", (event) => {
  pointerOnJobTable = event.target instanceof Element && Boolean(event.target.closest("#job-table"));
});
document.addEventListener("pointerout", (event) => {
  if (!event.relatedTarget) pointerOnJobTable = false; // out of the window
});
function jobRows(root) {
  return Array.from(root.querySelectorAll("tr[data-job]"), (row) => row.dataset.job).join(" ");
}
document.addEventListener("htmx:beforeSwap", (event) => {
  const table = event.detail.target;
  if (!pointerOnJobTable || !table || table.id !== "job-table" || !isPoll(event.detail.elt)) return;
  const next = document.createElement("template");
  next.innerHTML = event.detail.serverResponse;
  if (jobRows(next.content) !== jobRows(table)) event.detail.shouldSwap = false;
});

// The job list's selection across its pages and filters (jobs.selection): the page links and
// the filter form carry, as sel=, the jobs ticked on other pages (the bar's, less this page's
// rows) and the boxes ticked here, so the next page keeps them. Without JavaScript the links
// carry what the page was drawn with, and 保留勾选 (Keep ticks) posts this page's boxes.
const MAX_CARRIED = 50; // jobs.selection.MAX_CARRIED
function currentSelection(form) {
  const rows = Array.from(form.querySelectorAll("input[type=checkbox][name=jobs]"));
  const shown = new Set(rows.map((row) => row.value));
  const carried = Array.from(form.querySelectorAll("#selection-jobs input[name=sel]"))
    .map((input) => input.value)
    .filter((id) => !shown.has(id));
  const ids = carried.concat(rows.filter((row) => row.checked).map((row) => row.value));
  return Array.from(new Set(ids));
}
// The bar names what the count counts: a box ticked on this page gets its chip at once (not
// only once the user pages on), and unticking it removes the chip, so the two never disagree.
function selectionChip(list, id, name) {
  const item = document.createElement("li");
  item.className = "list-inline-item selection-job";
  item.dataset.job = id;
  const carried = document.createElement("input");
  carried.type = "hidden";
  carried.name = "sel";
  carried.value = id;
  const chip = document.createElement("span");
  chip.className = "d-inline-flex align-items-baseline gap-1 mw-100 border rounded px-2";
  const label = document.createElement("span");
  label.className = "text-break";
  label.textContent = name;
  const untick = document.createElement("button");
  untick.className = "btn btn-link btn-sm p-0 align-baseline selection-untick";
  untick.type = "submit";
  untick.name = "untick";
  untick.value = id;
  untick.title = list.dataset.untickTitle;
  untick.setAttribute("aria-label", list.dataset.untick.replace("%(name)s", () => name));
  untick.textContent = "×";
  chip.append(label, " ", untick); // a long name wraps in its box, the × beside its end
  item.append(carried, chip);
  return item;
}
function syncSelectionChips(form) {
  const list = form.querySelector("#selection-jobs");
  if (!list) return;
  form.querySelectorAll("input[type=checkbox][name=jobs]").forEach((box) => {
    const chip = list.querySelector(`.selection-job[data-job="${CSS.escape(box.value)}"]`);
    if (box.checked && !chip) {
      const row = box.closest("tr");
      const link = row && row.querySelector("td:nth-child(2) > a");
      const task = row && row.querySelector(".group-task");
      const name = `${link ? link.textContent : box.value}${task ? ` ${task.textContent}` : ""}`;
      // After the last chip, not after the list's closing whitespace (a wider gap).
      const chips = list.querySelectorAll(".selection-job");
      const item = selectionChip(list, box.value, name);
      if (chips.length) chips[chips.length - 1].after(item);
      else list.prepend(item);
    } else if (!box.checked && chip) {
      chip.remove();
    }
  });
}
// With JavaScript, the × of a job on this page unticks its box here; the others post the form
// (the server drops them from the selection and draws the page again).
document.addEventListener("click", (event) => {
  const untick = event.target instanceof Element && event.target.closest(".selection-untick");
  if (!untick || !untick.form) return;
  const box = untick.form.querySelector(`#select-${CSS.escape(untick.value)}`);
  if (!(box instanceof HTMLInputElement)) return;
  event.preventDefault();
  const item = untick.closest(".selection-job");
  const next = item && item.nextElementSibling && item.nextElementSibling.querySelector("button");
  box.checked = false;
  syncSelectAll(untick.form);
  carrySelection();
  (next || document.getElementById("selection-clear")).focus();
});
function safeAddressLength() {
  const short = document.getElementById("selection-links-short");
  return short ? Number(short.dataset.safeLength) : Infinity;
}
function sayWhereSelectionLeftOut() {
  const short = document.getElementById("selection-links-short");
  if (short) short.hidden = !document.querySelector("[data-keeps-selection][data-selection-left-out]");
}
// The filter form sends the selection only while its address, with what is typed in it now,
// stays within the bound (the server, not knowing what will be typed, left it out wherever
// something typed could pass it: jobs.selection.form_carries_selection).
function fitFormSelection(form) {
  const carried = form.querySelectorAll("input[name=sel]");
  carried.forEach((input) => { input.disabled = false; });
  const query = new URLSearchParams(new FormData(form)).toString();
  const fits = new URL(form.action, window.location.href).pathname.length + 1 + query.length <= safeAddressLength();
  carried.forEach((input) => { input.disabled = !fits; });
  form.toggleAttribute("data-selection-left-out", carried.length > 0 && !fits);
}
for (const type of ["input", "submit"]) {
  document.addEventListener(type, (event) => {
    const form = event.target instanceof HTMLFormElement ? event.target : event.target.form;
    if (!(form instanceof HTMLFormElement) || !form.hasAttribute("data-keeps-selection")) return;
    fitFormSelection(form);
    sayWhereSelectionLeftOut();
  });
}
// Stop / Delete selected and Compare with nothing ticked: the server would only say so, on the
// page drawn again with focus at its top (qa93). Nothing is sent; focus stays on the button, and
// a polite status under the buttons says why (written afresh at each press, to be read again).
document.addEventListener("submit", (event) => {
  const form = event.target;
  const button = event.submitter;
  if (!(form instanceof HTMLFormElement) || form.id !== "bulk-form" || !button) return;
  if (button.name !== "action" || !["stop", "delete", "compare"].includes(button.value)) return;
  if (currentSelection(form).length) return;
  event.preventDefault();
  const status = document.getElementById("bulk-none");
  if (!status) return;
  status.textContent = "";
  window.setTimeout(() => {
    status.textContent = status.dataset.none;
  }, 100);
});
function carrySelection() {
  const form = document.getElementById("bulk-form");
  if (!form) return;
  syncSelectionChips(form);
  // The count is every job Stop / Delete here would take, as many as the chips; the links
  // carry the first MAX_CARRIED of them (an address longer would be refused).
  const selected = currentSelection(form);
  const ids = selected.slice(0, MAX_CARRIED);
  // A link whose address the selection would make too long for the server (a label's, which
  // adds a label to the list's own: jobs.labels.SAFE_ADDRESS_LENGTH) goes without it, and the
  // bar says the ticks stay here.
  const safeLength = safeAddressLength();
  document.querySelectorAll("a[data-keeps-selection]").forEach((link) => {
    const url = new URL(link.href, window.location.href);
    url.searchParams.delete("sel");
    const without = url.pathname + url.search;
    ids.forEach((id) => url.searchParams.append("sel", id));
    const fits = (url.pathname + url.search).length <= safeLength;
    link.href = fits ? url.pathname + url.search : without;
    link.toggleAttribute("data-selection-left-out", !fits);
  });
  document.querySelectorAll("form[data-keeps-selection]").forEach((filters) => {
    filters.querySelectorAll("input[name=sel]").forEach((input) => input.remove());
    ids.forEach((id) => {
      const input = document.createElement("input");
      input.type = "hidden";
      input.name = "sel";
      input.value = id;
      filters.appendChild(input);
    });
    fitFormSelection(filters);
  });
  sayWhereSelectionLeftOut();
  const count = document.getElementById("selection-count");
  if (count) {
    const words =
      selected.length === 1
        ? count.dataset.one
        : count.dataset.other.replace("%(count)s", selected.length);
    // Written only when it changed: this runs after every refresh of the table (afterSettle),
    // and the count is read out each time its words are written, the same or not (qa84).
    if (count.textContent !== words) count.textContent = words;
    const bar = count.closest("#selection-bar");
    // Nothing ticked any more: no "0 jobs selected" bar, unless it says what was dropped.
    bar.hidden = !selected.length && !bar.querySelector("#selection-missing, #selection-left-out");
  }
  // Past the cap, paging on would drop the last ticks without a word: say so while they are
  // still here to act on.
  const cap = document.getElementById("selection-cap");
  if (cap) cap.hidden = selected.length <= MAX_CARRIED;
}
document.addEventListener("change", (event) => {
  const box = event.target;
  if (box instanceof HTMLInputElement && box.form && box.form.id === "bulk-form") {
    carrySelection();
    const status = document.getElementById("bulk-none");
    if (status && box.checked) status.textContent = "";
  }
});
document.addEventListener("htmx:afterSettle", carrySelection);
// A boosted link (the job list's column heads) is sent where its href says now: carrySelection
// rewrites it as boxes are ticked, and htmx read it once, when the link was drawn, so a job
// ticked here was dropped by the next sort (feat-list).
document.addEventListener("htmx:configRequest", (event) => {
  const link = event.detail.elt;
  if (link instanceof HTMLAnchorElement && link.matches("a[hx-boost][data-keeps-selection]")) {
    event.detail.path = link.getAttribute("href");
  }
});
// A page come back to (the back button) may have its boxes restored by the browser.
window.addEventListener("pageshow", carrySelection);

// Capture stacks (jobs/_hang_capture.html) is disabled while its request is on its way, but the
// status refresh draws its slot again every 2 s: it drew an enabled button then, and a second
// press was sent, refused (one capture in 30 s) and its answer could land over the first's.
// While the capture is on its way the slot is left as it is; the capture's answer draws the
// whole section again, the button as the job is then.
// So with a confirmed form on its way (data-sent: Stop, Stop the group, Delete): a fresh copy
// drawn over it had no data-sent, and a second tap on a slow network was asked and sent again
// (review62, qa45). The page the POST answers with replaces it all.
document.addEventListener("htmx:oobBeforeSwap", (event) => {
  const slot = event.detail.target;
  if (slot.id === "hang-capture-slot" && slot.querySelector("form.htmx-request")) {
    event.detail.shouldSwap = false;
  }
  if (slot.matches("form[data-sent]") || slot.querySelector("form[data-sent]")) {
    event.detail.shouldSwap = false;
  }
});

// htmx leaves the page as it was when a request fails (an error answer is not swapped in):
// say so, or 下一步 would seem to do nothing. Any later request that succeeds clears it.
function showRequestError(kind, status, text) {
  const box = document.getElementById("request-error");
  if (!box) return;
  box.textContent = text || box.dataset[kind].replace("%(status)s", String(status));
  box.hidden = false;
}
// A page's own refresh (hx-trigger="every 2s": a job's status and log tail; the wizard's idle
// count, "..., every 5s", also asks when its row changes).
function isPoll(elt) {
  return /(^|,)\s*every\s/.test(elt.getAttribute("hx-trigger") || "");
}
// Set once a refresh is answered 404: what the page shows was deleted since it was opened
// (Delete in another tab, a script's DeleteJob). Its refreshes stop then: each would be
// answered 404 again, two every 2 s for as long as the page stays open. So they do once one
// is answered 401, the log-in ended (expired, logged out in another tab): a job page left
// open overnight sent one a second, each a 401 and a warning in the server's log (qa36).
// Stopped by a 401 they start again when the person comes back to the tab (they may have
// logged in again in another): one refresh then, which stops them again if still refused.
let refreshesStopped = false;
let stoppedByLogIn = false;
document.addEventListener("htmx:beforeRequest", (event) => {
  if (refreshesStopped && isPoll(event.detail.elt)) event.preventDefault();
});
function refreshAgainOnReturn() {
  if (!stoppedByLogIn || document.visibilityState !== "visible") return;
  refreshesStopped = false;
  stoppedByLogIn = false;
}
window.addEventListener("focus", refreshAgainOnReturn);
document.addEventListener("visibilitychange", refreshAgainOnReturn);
document.addEventListener("htmx:responseError", (event) => {
  const status = event.detail.xhr.status;
  // A 401 is a log-in that has ended (jobs.http.HtmxLoginEndedMiddleware); a 403 here is the
  // CSRF check: the page's token is older than the session's. A 404 is a draft or job deleted
  // since the page was opened (another tab): trying again cannot help, so it says that; of a
  // refresh nothing was sent, so it says the page stopped following instead.
  // Someone else logged in since the page was opened (jobs.http.HtmxLoginEndedMiddleware):
  // nothing more is asked for this page, which shows the first user's data.
  if (status === 401 && event.detail.xhr.getResponseHeader("X-Console-Login") === "other-user") {
    refreshesStopped = stoppedByLogIn = true;
    showRequestError("otherUser", status);
    return;
  }
  if ((status === 404 || status === 401) && isPoll(event.detail.elt)) {
    refreshesStopped = true;
    stoppedByLogIn = status === 401;
    showRequestError(status === 404 ? "pollGone" : "pollLoggedOut", status);
    return;
  }
  const own = status === 503 ? serverMessage(event.detail.xhr) : "";
  if (own) {
    showRequestError("failed", status, own);
    return;
  }
  const kinds = { 401: "loggedOut", 403: "expired", 404: "gone" };
  showRequestError(kinds[status] || "failed", status);
});
// What a 503 page of the console says (its disk full, its database busy or out of reach:
// templates/503_*.html mark their heading and explanation), as text: the generic "The request
// failed (HTTP 503)" left someone pressing 下一步 again and again on a full disk (qa89). Read
// with DOMParser, which runs nothing, and shown as textContent, so no markup gets in.
function serverMessage(xhr) {
  if (!(xhr.getResponseHeader("Content-Type") || "").startsWith("text/html")) return "";
  const answer = new DOMParser().parseFromString(xhr.responseText, "text/html");
  return Array.from(answer.querySelectorAll("[data-request-error]"), (e) =>
    e.textContent.replace(/\s+/g, " ").trim(),
  )
    .filter(Boolean)
    .join(" ");
}
document.addEventListener("htmx:sendError", () => showRequestError("unreachable", 0));
// A refresh that gets no answer at all (a phone's connection that died mid-request, a network
// that swallows it) is given up after POLL_TIMEOUT_MS, and the page says so: htmx sends an
// element's next request only once its last has ended, so one left hanging froze the job
// list's statuses for good, without a word, until the page was reloaded (qa45). The next
// refresh asks again, and its answer clears the message. Only refreshes: a search or a step
// sent by the person may rightly take longer.
const POLL_TIMEOUT_MS = 15000;
document.addEventListener("htmx:configRequest", (event) => {
  if (isPoll(event.detail.elt) && !event.detail.timeout) event.detail.timeout = POLL_TIMEOUT_MS;
});
document.addEventListener("htmx:timeout", () => showRequestError("noAnswer", 0));
document.addEventListener("htmx:afterRequest", (event) => {
  const box = document.getElementById("request-error");
  if (box && event.detail.successful) box.hidden = true;
});

// Copy buttons (data-copy-target: the element whose text is copied): the wizard's review,
// the job page's platform job ID. #copy-status, when the page has one, says what happened.
// Copies with the Clipboard API where the page may use it (HTTPS or localhost); on plain
// HTTP elsewhere, the usual self-hosted case, it selects the text and copies the selection.
function copyText(source) {
  if (navigator.clipboard && window.isSecureContext) {
    return navigator.clipboard.writeText(source.textContent).catch(function () {
      return copySelection(source);  // the browser refused: copy the selection instead
    });
  }
  return copySelection(source);
}

function copySelection(source) {
  const range = document.createRange();
  range.selectNodeContents(source);
  const selection = window.getSelection();
  selection.removeAllRanges();
  selection.addRange(range);
  const copied = document.execCommand("copy");
  return copied ? Promise.resolve() : Promise.reject(new Error("copy refused"));
}

document.addEventListener("click", function (event) {
  const button = event.target.closest("[data-copy-target]");
  if (!button) return;
  event.preventDefault();
  const source = document.querySelector(button.dataset.copyTarget);
  if (!source) return;
  // The label is kept from the first press: a second press within 1.5 s (Enter held down,
  // pressed twice) read it as "✓" and put that back for good.
  if (!button.dataset.label) button.dataset.label = button.textContent;
  const status = document.getElementById("copy-status");
  copyText(source).then(
    function () {
      button.textContent = "✓";
      say(status, button.dataset.copiedText);
      clearTimeout(button.copiedTimer);
      button.copiedTimer = setTimeout(function () { button.textContent = button.dataset.label; }, 1500);
    },
    function () {
      // The text is selected: Ctrl-C copies it.
      say(status, button.dataset.selectedText);
    },
  );
});

// A live region set to the words it already holds is not read out again: a second copy said
// nothing. It is emptied first and given the words a moment later, a change to read out
// (presses closer together than that are said once).
function say(status, words) {
  if (!status) return;
  status.textContent = "";
  clearTimeout(status.sayTimer);
  status.sayTimer = setTimeout(function () { status.textContent = words || ""; }, 100);
}

// A filter refused (a reversed date range on the job list or 我的用量) comes back as a new
// page with focus on the page itself: the field was marked, but nothing was said (qa84).
// Focus goes to the first field with a problem, whose message a screen reader says with it
// (aria-describedby), as a wizard step's does; not when the person has moved it already.
document.addEventListener("DOMContentLoaded", () => {
  const problem = document.querySelector("form[data-focus-problem] [aria-invalid='true']");
  if (problem && (!document.activeElement || document.activeElement === document.body)) {
    problem.focus();
  }
});
