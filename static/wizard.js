// The create-job wizard: copy buttons on the review step. Everything else is plain forms
// and htmx attributes; the CSP forbids inline scripts, so this file is all the JS there is.
"use strict";
document.addEventListener("click", function (event) {
  const button = event.target.closest("[data-copy-target]");
  if (!button) return;
  event.preventDefault();
  const source = document.querySelector(button.dataset.copyTarget);
  if (!source || !navigator.clipboard) return;
  const label = button.textContent;
  navigator.clipboard.writeText(source.textContent).then(function () {
    button.textContent = "✓";
    setTimeout(function () { button.textContent = label; }, 1500);
  });
});
