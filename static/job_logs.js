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

  // 自动换行 (Wrap lines): the tail's and the search results' long lines wrap inside their box.
  // The choice is this browser's (localStorage), for every job page; a class on <html> keeps it
  // through each refresh and tab swap. The page is served without it, so without JavaScript
  // (the switch stays hidden then) lines scroll sideways, as they always did.
  const WRAP_KEY = "console.logWrap";
  const wrapSwitch = document.getElementById("log-wrap");
  if (wrapSwitch) {
    let on = false;
    try { on = localStorage.getItem(WRAP_KEY) === "on"; } catch (e) { /* storage blocked */ }
    wrapSwitch.checked = on;
    document.documentElement.classList.toggle("log-wrap", on);
    document.getElementById("log-wrap-switch").hidden = false;
    wrapSwitch.addEventListener("change", function () {
      try { localStorage.setItem(WRAP_KEY, wrapSwitch.checked ? "on" : "off"); } catch (e) { /* this page only */ }
      document.documentElement.classList.toggle("log-wrap", wrapSwitch.checked);
      toBottom();  // the tail's height changed: the newest line stays in view if it was
    });
  }

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
