// Behaviour shared by every page. No inline scripts anywhere: the CSP forbids them.
"use strict";

// The language switch returns to the page as it is now (on a wizard step the buttons belong
// to the step's form instead, which saves what was typed first; see step.html).
document.addEventListener("submit", (event) => {
  const form = event.target;
  if (!(form instanceof HTMLFormElement) || !form.hasAttribute("data-language-switch")) return;
  form.elements.next.value = window.location.pathname + window.location.search;
});

// A form that destroys something asks first (data-confirm holds the question). Without
// JavaScript the server asks instead, on a page of its own.
document.addEventListener("submit", (event) => {
  const form = event.target;
  if (!(form instanceof HTMLFormElement) || !form.dataset.confirm) return;
  if (!window.confirm(form.dataset.confirm)) {
    event.preventDefault();
    return;
  }
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

// htmx leaves the page as it was when a request fails (an error answer is not swapped in):
// say so, or 下一步 would seem to do nothing. Any later request that succeeds clears it.
function showRequestError(kind, status) {
  const box = document.getElementById("request-error");
  if (!box) return;
  box.textContent = box.dataset[kind].replace("%(status)s", String(status));
  box.hidden = false;
}
document.addEventListener("htmx:responseError", (event) => {
  const status = event.detail.xhr.status;
  // A 403 here is the CSRF check: the page's token is older than the session's.
  showRequestError(status === 403 ? "expired" : "failed", status);
});
document.addEventListener("htmx:sendError", () => showRequestError("unreachable", 0));
document.addEventListener("htmx:afterRequest", (event) => {
  const box = document.getElementById("request-error");
  if (box && event.detail.successful) box.hidden = true;
});
