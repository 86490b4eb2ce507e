// Job page: keeps a replica's log tail on its newest line while it refreshes, unless the
// reader has scrolled up to read older lines.
"use strict";
(function () {
  let follow = true;
  function logs() { return document.getElementById("log-lines"); }
  function toBottom() {
    const pre = logs();
    if (pre && follow) { pre.scrollTop = pre.scrollHeight; }
  }
  document.addEventListener("DOMContentLoaded", toBottom);
  document.addEventListener("htmx:beforeSwap", function (event) {
    const pre = logs();
    const target = event.detail.target;
    if (pre && target && (target.id === "log-panel" || target.id === "log-tail")) {
      const clicked = event.detail.requestConfig && event.detail.requestConfig.elt.tagName === "A";
      follow = clicked || pre.scrollHeight - pre.scrollTop - pre.clientHeight < 8;
    }
  });
  document.addEventListener("htmx:afterSettle", toBottom);
  // A replica's tab swaps the whole panel, the tab clicked with it: focus goes to the tab now
  // active, so a keyboard user goes on from where they were instead of from the page's top.
  document.addEventListener("htmx:afterSettle", function (event) {
    const elt = event.detail.requestConfig && event.detail.requestConfig.elt;
    if (event.detail.target && event.detail.target.id === "log-panel" && elt && elt.tagName === "A") {
      const tab = document.querySelector("#log-panel .nav-link.active");
      if (tab) { tab.focus(); }
    }
  });
})();
