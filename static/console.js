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
