// Behaviour shared by every page. No inline scripts anywhere: the CSP forbids them.
"use strict";

// The language switch returns to the page as it is now. htmx moves between wizard steps
// without reloading the navigation bar, so the `next` rendered with the page can be stale.
document.addEventListener("submit", (event) => {
  const form = event.target;
  if (!(form instanceof HTMLFormElement) || !form.hasAttribute("data-language-switch")) return;
  form.elements.next.value = window.location.pathname + window.location.search;
  // On a wizard step, what was typed is saved first (as 上一步 saves it), so switching the
  // language does not lose it. The switch happens whether the save worked or not.
  const wizard = document.getElementById("wizard-form");
  if (!wizard || form.dataset.saved) return;
  event.preventDefault();
  const data = new FormData(wizard);
  data.set("action", "save");
  const language = event.submitter && event.submitter.name === "language" ? event.submitter : null;
  // getAttribute: the form's own "action" property is shadowed by its buttons named action.
  fetch(wizard.getAttribute("action"), { method: "POST", body: data, headers: { "HX-Request": "true" }, credentials: "same-origin" })
    .catch(() => null)
    .finally(() => {
      form.dataset.saved = "1";
      if (language) {
        const chosen = document.createElement("input");
        chosen.type = "hidden";
        chosen.name = "language";
        chosen.value = language.value;
        form.appendChild(chosen);
      }
      form.submit();
    });
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
