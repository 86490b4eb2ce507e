// The admin's autocomplete boxes (a card quota's user and group: Django's select2 widget).
// select2 hides the <select> its <label> names and draws a combo box of its own, named only
// by what it shows (nothing, until a row is chosen), and a search box, when opened, named by
// nothing (qa115: axe's aria-input-field-name on both). Each is named here by the field's
// label, the combo box by the label and then the row chosen ("用户: alice"), and described by
// the field's help as the <select> is. Run after Django's autocomplete.js has drawn them
// (jQuery's ready callbacks run in the order they were added), and for a formset's new row.
"use strict";
{
  const $ = django.jQuery;

  function labelOf(select) {
    return select.id ? document.querySelector(`label[for="${CSS.escape(select.id)}"]`) : null;
  }

  function name(select) {
    const label = labelOf(select);
    const combo = select.nextElementSibling
      && select.nextElementSibling.querySelector(".select2-selection[role=combobox]");
    if (!label || !combo) return;
    const labelText = label.textContent.trim();
    // Said from the <select>'s own choice: the box select2 shows it in also holds its "×" (a
    // mouse's way to clear it), which a name drawn from that box said ("用户: ×alice").
    const named = function () {
      const chosen = select.selectedOptions.length ? select.selectedOptions[0].text.trim() : "";
      combo.removeAttribute("aria-labelledby");
      combo.setAttribute("aria-label", chosen ? `${labelText} ${chosen}` : labelText);
    };
    named();
    $(select).on("change", named);
    // The box inside it that shows the row chosen, a textbox to select2, is words of the combo
    // box's name here, not a nameless field of its own (axe: aria-input-field-name).
    const shown = combo.querySelector(".select2-selection__rendered");
    if (shown) {
      shown.removeAttribute("role");
      shown.removeAttribute("aria-readonly");
    }
    const help = select.getAttribute("aria-describedby");
    if (help) combo.setAttribute("aria-describedby", help);
    // Open, the combo box controls its list of rows (ARIA 1.2 asks it of an expanded one;
    // select2 says only aria-owns); closed, the list is gone.
    $(select).on("select2:open", function () {
      const search = document.querySelector(".select2-container--open .select2-search__field");
      if (search) search.setAttribute("aria-label", labelText.replace(/[:：]$/, ""));
      const list = document.querySelector(".select2-container--open .select2-results__options");
      if (list && list.id) combo.setAttribute("aria-controls", list.id);
    });
    $(select).on("select2:close", function () {
      combo.removeAttribute("aria-controls");
    });
  }

  $(function () {
    document.querySelectorAll("select.admin-autocomplete").forEach(function (select) {
      if (!select.name.includes("__prefix__")) name(select);
    });
  });
  document.addEventListener("formset:added", function (event) {
    event.target.querySelectorAll("select.admin-autocomplete").forEach(name);
  });
}
