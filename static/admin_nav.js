// The admin's side menu on a screen narrower than 1280 pixels. Open beside the content, it left
// the job list 160 pixels at 768 (430 with it folded away by hand), and its eleven columns
// scrolled out of sight. Below 1280 (admin_site.css) the menu opens over the content instead,
// as a drawer, and each page starts with it folded: the content always has the whole width.
// Django's nav_sidebar.js has run by now (this script comes after it, in the footer) and
// opened or folded the menu from the reader's saved choice; folding it here goes through its
// own button, so the button's state and the menu's aria-expanded agree, and the saved choice
// is put back as it was: what the reader chose on a wide screen still holds there. Escape
// folds the open drawer.
"use strict";
(function () {
  const main = document.getElementById("main");
  const toggle = document.getElementById("toggle-nav-sidebar");
  if (!main || !toggle) return;
  const narrow = window.matchMedia("(max-width: 1279.98px)");
  const key = "django.admin.navSidebarIsOpen";
  main.classList.add("nav-drawer");
  if (narrow.matches && main.classList.contains("shifted")) {
    const saved = localStorage.getItem(key);
    toggle.click();
    if (saved === null) localStorage.removeItem(key);
    else localStorage.setItem(key, saved);
  }
  document.addEventListener("keydown", function (event) {
    if (event.key === "Escape" && narrow.matches && main.classList.contains("shifted")) {
      toggle.click();
      toggle.focus();
    }
  });
})();
