// Behaviour shared by every page. No inline scripts anywhere: the CSP forbids them.
"use strict";

// The language switch returns to the page as it is now. htmx moves between wizard steps
// without reloading the navigation bar, so the `next` rendered with the page can be stale.
document.addEventListener("submit", (event) => {
  const form = event.target;
  if (form instanceof HTMLFormElement && form.hasAttribute("data-language-switch")) {
    form.elements.next.value = window.location.pathname + window.location.search;
  }
});

// A form that destroys something asks first (data-confirm holds the question). Without
// JavaScript the form still works, without the question.
document.addEventListener("submit", (event) => {
  const form = event.target;
  if (form instanceof HTMLFormElement && form.dataset.confirm && !window.confirm(form.dataset.confirm)) {
    event.preventDefault();
  }
});
