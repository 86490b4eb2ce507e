// The create-job wizard: where focus goes when htmx swaps in a step, the current step kept in
// view on a phone, AIAK creation picking PyTorch and its section following the pool. Its
// review step's copy buttons are console.js's (shared with the job page); everything else is
// plain forms and htmx attributes. The CSP forbids inline scripts, so the JS is all in these files.
"use strict";

// After htmx swaps in a step (下一步, 上一步, a stepper link), focus moves as a page load
// would move it: to the first field with a problem, else to the step's heading. Otherwise
// it stays on a button that is no longer there, and a screen reader says nothing.
// A row's 添加/删除 (labels, environment variables, roles, mounts) keeps focus in its table instead:
// on the new row's first field, or after a removal on the table's add button; 填入该示例 puts it
// on the command it filled in. 知道了 under a secret typed in plain text puts it on the field
// warned of (qa74: on the heading, a keyboard user Tabbed back down past every field).
// 保存并返回确认 puts it on the review's heading of the section just edited, not the page's
// (qa115: a screen reader started again from the top of the review).
let rowAction = "";
let warnedField = "";
let editedStep = "";
document.addEventListener(
  "submit",
  function (event) {
    const value = (event.submitter && event.submitter.value) || "";
    rowAction = /^(add-row|remove-row-\d+|fill-example-\w+)$/.test(value) ? value : "";
    warnedField = value.startsWith("dismiss-secret-") ? fieldWarnedOf(event.submitter) : "";
    editedStep = value === "to-review" ? stepOf(event.target) : "";
  },
  true,
);

// The step a form saves, the last part of its address (/create/<draft>/<step>/). Read from
// the attribute: form.action is its buttons named "action" (a form's controls win over its
// properties).
function stepOf(form) {
  if (!(form instanceof HTMLFormElement)) return "";
  const address = new URL(form.getAttribute("action") || "", document.baseURI);
  return address.pathname.split("/").filter(Boolean).pop() || "";
}

function fieldWarnedOf(button) {
  if (button.closest("#command-secrets")) return "id_command";
  if (button.closest("#entrypoint-secrets")) return "id_entrypoint";
  const row = button.closest("tr.env-row");
  return row ? row.querySelector(".cell-value input").id : "";
}

function rowActionFocus(action) {
  if (action.startsWith("fill-example-")) return document.getElementById("id_command");
  const rows = document.querySelectorAll(
    "#wizard tr.label-row, #wizard tr.env-row, #wizard tr.role-row, #wizard tr.mount-row",
  );
  if (action === "add-row" && rows.length) {
    return rows[rows.length - 1].querySelector("input:not([type=hidden]), select");
  }
  if (action.startsWith("remove-row-")) {
    return document.querySelector("#add-label, #add-env, #add-role, #add-mount");
  }
  return null;
}

// On a narrow screen the steps are one row that scrolls sideways (console.css): the current
// one is brought into view, on load and after htmx swapped a step in. The row starts with a
// whole step, the one before the current when both fit, else the current: centred, the step
// before showed as the end of its label (qa92: "and ✓", "ced ✓" at 375 pixels). Near the end
// of the row (确认) the row could not scroll that far: a space after the last step lets it.
function showCurrentStep() {
  const current = document.querySelector(".wizard-steps [aria-current='step']");
  const row = current && current.parentElement;
  if (!row) return;
  row.style.paddingInlineEnd = "";
  if (row.scrollWidth <= row.clientWidth) return;
  const origin = row.getBoundingClientRect().left + row.clientLeft - row.scrollLeft;
  const left = (step) => step.getBoundingClientRect().left - origin;
  const right = current.getBoundingClientRect().right - origin;
  const before = current.previousElementSibling;
  const start = before && right - left(before) <= row.clientWidth ? left(before) : left(current);
  const spare = start - (row.scrollWidth - row.clientWidth);
  if (spare > 0) row.style.paddingInlineEnd = `${spare}px`;
  row.scrollLeft = start;
}
document.addEventListener("DOMContentLoaded", showCurrentStep);

document.addEventListener("htmx:afterSettle", function (event) {
  if (!(event.target instanceof Element) || event.target.id !== "wizard") return;
  showCurrentStep();
  const action = rowAction;
  const warned = warnedField && document.getElementById(warnedField);
  const edited = editedStep && document.getElementById(`review-${editedStep}`);
  rowAction = warnedField = editedStep = "";
  const invalid = document.querySelector("#wizard [aria-invalid='true'], #wizard .is-invalid");
  // A row's 添加 or 删除 keeps focus in its table also on a step with problems (qa84: after
  // 新增挂载 it went to the first of them, away from the row added).
  const target = rowActionFocus(action) || invalid || warned || edited
    || document.getElementById("step-heading");
  if (target) focusInView(target);
  sayRowAction(action);
});

// A row's 删除 is named after what the row holds (_remove_row.html): typed into, or emptied, the
// name follows at once, not only once the step is drawn again (qa93: "删除 2" for a variable
// typed in the row).
document.addEventListener("input", function (event) {
  const field = event.target;
  if (!(field instanceof HTMLInputElement) || !field.id) return;
  const button = document.querySelector(`#wizard button[data-named-by="${CSS.escape(field.id)}"]`);
  if (!button) return;
  const name = field.value.trim();
  button.setAttribute(
    "aria-label",
    name ? button.dataset.named.replace("%(name)s", name) : button.dataset.unnamed,
  );
});

// A row added or removed is said (qa93: nothing was, the table changing out of earshot): by
// #wizard-rows-said (step.html), a live region outside what htmx swaps, in the words the table's
// add button carries ("已删除第 2 行环境变量"). Written a moment after it is emptied, so the same
// words twice (two rows removed in turn) are said twice.
// Emptied at every step drawn, one without rows too: what it said stays in it, and a screen
// reader's reading of the page came upon "已删除第 2 行挂载" on the next step (qa115).
function sayRowAction(action) {
  const said = document.getElementById("wizard-rows-said");
  if (!said) return;
  said.textContent = "";
  const add = document.querySelector("#add-label, #add-env, #add-role, #add-mount");
  if (!add) return;
  const removed = /^remove-row-(\d+)$/.exec(action);
  const rows = document.querySelectorAll(
    "#wizard tr.label-row, #wizard tr.env-row, #wizard tr.role-row, #wizard tr.mount-row",
  );
  const words = removed ? add.dataset.removed : action === "add-row" ? add.dataset.added : "";
  if (!words) return;
  const row = removed ? Number(removed[1]) + 1 : rows.length;
  window.setTimeout(() => {
    said.textContent = words.replace("%(n)s", row);
  }, 100);
}

// Focus scrolls the page only as far as the field, leaving its label (and the step's alert of
// problems) above the window (qa93): the field is scrolled to with its scroll-margin-top
// (console.css), room for its label. At once, as focus scrolls: Bootstrap's smooth scrolling
// could be cut short by the next scroll (a screen reader's, the step row's).
function focusInView(target) {
  target.focus({ preventScroll: true });
  // A smooth scroll still under way (Tab to 下一步 scrolls to it smoothly, and Enter may come
  // before it ends) is stopped where it is: else it went on to its end after this one, a
  // field already in view carried out of it, its label above the window.
  window.scrollTo({ top: window.scrollY, behavior: "instant" });
  target.scrollIntoView({ block: "nearest", behavior: "instant" });
}

// The idle count under each role's cards asks again every 5 s and is a live region: drawn
// again with the same words, a screen reader read them out again every 5 s, once per role,
// over whatever the user was doing. Only a count that changed is drawn. A remote pool's
// "Updated N s ago" beside it changes at every check: it is hidden from screen readers there
// (the pool's stock above says it) and its words are changed in place, so the count is not
// drawn, and read out, again for it alone (left25).
function withoutAge(nodes) {
  const box = document.createElement("div");
  box.append(...Array.from(nodes, (node) => node.cloneNode(true)));
  box.querySelectorAll(".pool-freshness").forEach((age) => age.replaceChildren());
  return box.innerHTML;
}
document.addEventListener("htmx:beforeSwap", function (event) {
  const count = event.detail.target;
  if (!(count instanceof Element) || !count.classList.contains("idle-count")) return;
  const answer = document.createElement("template");
  answer.innerHTML = event.detail.serverResponse;
  // Row 0's answer also brings the pool's stock line (#pool-stock, out of band): only the
  // count's own part is compared, else row 0's count was drawn, and read out, at every check
  // (qa84). A count not drawn again takes its answer's stock line with it: it is put in here,
  // and only when its words changed (it is no live region, but a screen reader's place in it
  // would be lost).
  const stock = answer.content.querySelector("[hx-swap-oob]");
  if (stock) stock.remove();
  if (answer.innerHTML === count.innerHTML) {
    event.detail.shouldSwap = false;
  } else if (withoutAge(answer.content.childNodes) === withoutAge(count.childNodes)) {
    event.detail.shouldSwap = false;
    const ages = answer.content.querySelectorAll(".pool-freshness");
    count.querySelectorAll(".pool-freshness").forEach((age, i) => {
      age.textContent = ages[i].textContent;
    });
  }
  const shown = stock && !event.detail.shouldSwap && document.getElementById(stock.id);
  if (shown) {
    stock.removeAttribute("hx-swap-oob");
    if (shown.outerHTML !== stock.outerHTML) shown.replaceWith(stock);
  }
});

// A field with a problem, once changed, stops showing the problem as current: the server
// checks it again on 下一步, and until then the message would describe a value that is gone
// (请选择 AIAK 训练模版 after one was chosen).
function clearProblem(event) {
  const field = event.target;
  if (!(field instanceof HTMLElement) || !field.classList.contains("is-invalid")) return;
  field.classList.remove("is-invalid");
  field.removeAttribute("aria-invalid");
  const messages = document.getElementById(field.id + "_error");
  if (messages) messages.hidden = true;
  // The step's count of problems goes too once none is marked (qa101: "This step has 3
  // problems" stayed after the three AIAK choices were made); one holding a problem of no
  // field (a line of its own under the count) stays.
  const summary = document.getElementById("step-errors");
  const form = field.closest("form");
  const marked = form && form.querySelector(".is-invalid, [aria-invalid='true']");
  if (summary && form && summary.children.length === 1 && !marked) summary.hidden = true;
}
document.addEventListener("input", clearProblem);
document.addEventListener("change", clearProblem);

// AIAK templates run on PyTorch: choosing AIAK creation picks PyTorch too, rather than have
// 下一步 refuse another framework (which it still does without JavaScript).
document.addEventListener("change", function (event) {
  const mode = event.target;
  if (!(mode instanceof HTMLInputElement) || mode.name !== "creation_mode") return;
  if (mode.value !== "aiak" || !mode.checked) return;
  const pytorch = document.querySelector("input[name=framework][value=PyTorchJob]");
  if (pytorch && !pytorch.checked) pytorch.checked = true;
});

// A mount row the server redraws (its storage type changed, or a volume read-only for everyone
// chosen) is drawn from the values sent with the request, and replaces the row whole. What was
// typed into the row while that answer was on its way (the mount path, typed right after
// picking the volume) went with the old row: it is carried into the new one. htmx keeps the
// focus and the caret on a field of the same id itself. Text only: a choice made in the row
// meanwhile asks for a redraw of its own, which replaces this one (hx-sync).
const sentRows = new WeakMap();
function typedFields(row) {
  return row.querySelectorAll("input[name]:not([type=hidden]):not([type=checkbox]):not([type=radio]), textarea[name]");
}
document.addEventListener("htmx:configRequest", function (event) {
  // The values are read here, as htmx has just read them for the request.
  const row = event.detail.target;
  if (!(row instanceof HTMLTableRowElement) || !row.classList.contains("mount-row")) return;
  sentRows.set(row, new Map([...typedFields(row)].map((field) => [field.name, field.value])));
});
let typedMeanwhile = null;
document.addEventListener("htmx:beforeSwap", function (event) {
  const sent = sentRows.get(event.detail.target);
  typedMeanwhile = null;
  if (!sent) return;
  typedMeanwhile = [...typedFields(event.detail.target)].filter(
    (field) => sent.has(field.name) && sent.get(field.name) !== field.value,
  ).map((field) => [field.name, field.value]);
});
document.addEventListener("htmx:afterSwap", function () {
  const typed = typedMeanwhile;
  typedMeanwhile = null;
  if (!typed) return;
  for (const [name, value] of typed) {
    const field = document.querySelector(`#wizard [name="${CSS.escape(name)}"]`);
    if (field) field.value = value;
  }
});

// The step drawn again by its own request (a row's 添加 or 删除, 填入该示例, 知道了) is drawn
// from the values sent with it: only the buttons are off meanwhile, and what was typed or
// chosen then (a value finished while 添加 was on its way, the command, a card type, a box
// ticked) went with the old form (qa74, carry). It is carried into the new one, on the same
// step, into a field the answer drew with the value sent: a field the answer changed (the
// command 填入该示例 filled in) keeps the answer's, and a choice the answer does not offer is
// not made. A 删除 moves the rows below it up a name (env-2-value is env-1-value in the
// answer): what was typed into them follows them when the answer has one row fewer than sent,
// which the server answers only once it removed that very row (the main mount and a custom
// job's only role are kept: then no row moved). An answer drawn from the draft as saved,
// not from what was sent (the page was out of date, #stale-notice), takes nothing carried.
// Each request's record is keyed by its requestConfig (the same object from configRequest
// to afterSettle): another element's request, or one that failed, never reads it.
const stepRequests = new WeakMap();
const STEP_FIELDS = "input[name]:not([type=hidden]), textarea[name], select[name]";
function stepFields(form) {
  const fields = new Map();
  for (const field of form.querySelectorAll(STEP_FIELDS)) {
    fields.set(field.name, [...(fields.get(field.name) || []), field]);
  }
  return fields;
}
function isBox(field) {
  return field.type === "checkbox" || field.type === "radio";
}
// What a field sends, comparable: its text or option, the ticked values of a box group.
function valueOf(fields) {
  const sent = fields.filter((field) => !isBox(field) || field.checked);
  return JSON.stringify(sent.map((field) => field.value));
}
function valuesOf(form) {
  return new Map([...stepFields(form)].map(([name, fields]) => [name, valueOf(fields)]));
}
// Puts a carried value into the fields of its name; returns those a person's change would
// have changed, none if the answer offers no such option or box.
function carry(fields, value) {
  const values = JSON.parse(value);
  const [field] = fields;
  if (isBox(field)) {
    if (!values.every((wanted) => fields.some((box) => box.value === wanted))) return [];
    const flipped = fields.filter((box) => box.checked !== values.includes(box.value));
    flipped.forEach((box) => (box.checked = !box.checked));
    return flipped.filter((box) => box.type === "checkbox" || box.checked);
  }
  const options = field instanceof HTMLSelectElement ? [...field.options] : null;
  if (options && !options.some((option) => option.value === values[0])) return [];
  field.value = values[0];
  return [field];
}
// The name a field of the form sent has in the answer: a row below the one removed moves up
// one, the removed row's fields have none (null).
function nameInAnswer(name, removal) {
  const row = /^(\w+)-(\d+)-(\w+)$/.exec(name);
  if (!removal || !row || row[1] !== removal.prefix || Number(row[2]) < removal.row) return name;
  return Number(row[2]) === removal.row ? null : `${row[1]}-${Number(row[2]) - 1}-${row[3]}`;
}
document.addEventListener("htmx:configRequest", function (event) {
  const form = event.detail.elt;
  if (!(form instanceof HTMLFormElement) || form.id !== "wizard-form") return;
  const action = String(event.detail.formData.get("action") || "");
  const removed = /^remove-row-(\d+)$/.exec(action);
  const total = form.querySelector("input[name$='-TOTAL_FORMS']");
  stepRequests.set(event.detail, {
    // getAttribute: form.action is the step's buttons, all named action.
    step: form.getAttribute("action"),
    sent: valuesOf(form),
    removal: removed &&
      total && {
        prefix: total.name.replace(/-TOTAL_FORMS$/, ""),
        row: Number(removed[1]),
        rows: Number(total.value),
      },
  });
});
document.addEventListener("htmx:beforeSwap", function (event) {
  const request = stepRequests.get(event.detail.requestConfig);
  if (!request) return;
  // The old form, still there: what is in it now against what it sent.
  const now = valuesOf(event.detail.requestConfig.elt);
  request.typed = [...now].filter(([name, value]) => request.sent.get(name) !== value);
});
document.addEventListener("htmx:afterSwap", function (event) {
  const request = stepRequests.get(event.detail.requestConfig);
  const form = document.getElementById("wizard-form");
  if (!request || !request.typed || !form) return;
  const typed = request.typed;
  request.typed = null; // afterSwap comes once per node swapped in
  if (form.getAttribute("action") !== request.step || form.querySelector("#stale-notice")) return;
  const { removal } = request;
  const total = removal && form.querySelector(`[name="${removal.prefix}-TOTAL_FORMS"]`);
  const removed = total && Number(total.value) === removal.rows - 1 && removal;
  const drawn = stepFields(form);
  request.carried = [];
  for (const [name, value] of typed) {
    const fields = drawn.get(nameInAnswer(name, removed));
    if (fields && valueOf(fields) === request.sent.get(name)) {
      request.carried.push(...carry(fields, value));
    }
  }
});
// A value carried is told to what follows its field as the person's change was, to the old
// field (the idle count and the card totals of step 3, a mount row's volumes, the AIAK
// section): once, after the swap settled and htmx wired the new step up.
document.addEventListener("htmx:afterSettle", function (event) {
  const request = stepRequests.get(event.detail.requestConfig);
  if (!request || !request.carried) return;
  const carried = request.carried;
  request.carried = null;
  carried.forEach((field) => field.dispatchEvent(new Event("change", { bubbles: true })));
});

// 下一步, 上一步, a stepper link, 保存并返回确认 and 中文/EN leave the step, or may (a refused
// 下一步 comes back, but only its answer says so). What would be typed or chosen meanwhile has
// no step to be carried into: the step was saved without it, and it was lost without a word
// (carry). Meanwhile the step's fields are read-only and the form says it is busy (aria-busy),
// as its buttons are off; a select, a checkbox and a radio have no read-only: they are
// disabled. They open again once the request has failed (the step stays, as it was); when
// htmx is told to load another page (a language switch), they stay as the buttons stay.
// Busy and read-only were not read out (focus78): meanwhile a polite status (#wizard-busy,
// step.html) says the step is being saved, or the language switched, emptied once the request
// ends, and a text field made read-only says so with aria-readonly too (镜像地址 is a combobox).
const staysOnStep = /^(add-row|remove-row-\d+|fill-example-\w+|dismiss-[\w-]+)$/;
let lockedFields = [];
// beforeSend: the request is sure to be sent then, and its afterRequest opens them again.
document.addEventListener("htmx:beforeSend", function (event) {
  const form = event.detail.requestConfig.elt;
  if (!(form instanceof HTMLFormElement) || form.id !== "wizard-form") return;
  const action = String(event.detail.requestConfig.formData.get("action") || "");
  if (staysOnStep.test(action)) return;
  form.setAttribute("aria-busy", "true");
  lockFields(form);
  const status = document.getElementById("wizard-busy");
  const words = action.startsWith("language-") ? "switching" : "saving";
  if (status) status.textContent = status.dataset[words];
});
// A mount row another answer draws inside the busy step meanwhile comes locked too.
document.addEventListener("htmx:load", function (event) {
  const drawn = event.target;
  if (drawn instanceof Element && drawn.closest("#wizard-form[aria-busy]")) lockFields(drawn);
});
function lockFields(root) {
  for (const field of root.querySelectorAll(STEP_FIELDS)) {
    const lock = isBox(field) || field instanceof HTMLSelectElement ? "disabled" : "readOnly";
    if (field[lock]) continue;
    field[lock] = true;
    if (lock === "readOnly") field.setAttribute("aria-readonly", "true");
    lockedFields.push([field, lock]);
  }
}
document.addEventListener("htmx:afterRequest", function (event) {
  // requestConfig.elt: once the answer replaced the form, the event comes from its parent.
  const request = event.detail.requestConfig;
  if (!request || request.elt.id !== "wizard-form" || event.detail.keepIndicators) return;
  lockedFields.forEach(([field, lock]) => {
    field[lock] = false;
    field.removeAttribute("aria-readonly");
  });
  lockedFields = [];
  request.elt.removeAttribute("aria-busy");
  const status = document.getElementById("wizard-busy");
  if (status) status.textContent = "";
});

// The control a step's request was sent from (下一步, a step link, a box Enter was pressed in,
// 添加) is disabled until the answer comes, and the browser drops focus to the page: when the
// request failed, the next Tab started at the page's first link (focus78). Focus goes back to
// it then, or, gone meanwhile (a mount row redrawn), to the one of its id, else to the step's
// first field with a problem or first field; not if the person has put focus somewhere since.
// An answer that draws a step moves focus itself (afterSettle, above). The control stays
// disabled meanwhile, not aria-disabled with focus kept: disabled refuses a second press made
// in any way (a click, Enter or Space, a screen reader's click, Enter in a field, which presses
// the step's first button) with nothing more to keep in step; #wizard-busy says what is going on.
const sentFrom = new WeakMap();
document.addEventListener("htmx:configRequest", function (event) {
  // configRequest comes before htmx disables anything: a field Enter was pressed in has focus.
  const form = event.detail.elt;
  if (!(form instanceof HTMLFormElement) || form.id !== "wizard-form") return;
  const trigger = event.detail.triggeringEvent;
  const button = trigger && trigger.submitter;
  // Enter in a field presses 下一步's hidden twin (step.html): the field sent it, and has focus.
  const sender = button && !button.matches("[aria-hidden=true]") ? button : document.activeElement;
  if (sender && sender !== document.body) {
    sentFrom.set(event.detail, { control: sender, id: sender.id });
  }
});
document.addEventListener("htmx:afterRequest", function (event) {
  const request = event.detail.requestConfig;
  const sent = request && sentFrom.get(request);
  // Failed: refused (an error status, not swapped in), or no answer at all (status 0).
  if (!sent || !(event.detail.successful === false || event.detail.xhr.status === 0)) return;
  sentFrom.delete(request);
  if (document.activeElement && document.activeElement !== document.body) return;
  const form = document.getElementById("wizard-form");
  const control = sent.control.isConnected ? sent.control : document.getElementById(sent.id);
  const problem = form && form.querySelector("[aria-invalid='true'], .is-invalid");
  const target = control || problem || (form && form.querySelector(STEP_FIELDS));
  if (target) focusInView(target);
});
// Nothing inside the busy step asks the server anything (the idle counts ask every 5 s): the
// answer would land in a step on its way out, asked without the fields disabled.
document.addEventListener("htmx:configRequest", function (event) {
  const elt = event.detail.elt;
  if (elt.id !== "wizard-form" && elt.closest && elt.closest("#wizard-form[aria-busy]")) {
    event.preventDefault();
  }
});

// 高级配置 on an AIHC pool with step 5's fault tolerance off: the warning that “任务发生容错”
// never comes (in the 告警 help text, AdvancedForm.alert_warning_said) is drawn whenever it
// could apply, shown as the server drew the step, and then while that event is ticked: until
// left54 it showed only once the step was drawn again, and stayed after the box was unticked.
document.addEventListener("change", function (event) {
  const box = event.target;
  if (!(box instanceof HTMLInputElement) || box.name !== "alert_items" || box.value !== "jobFT") {
    return;
  }
  const warning = document.getElementById("alert-items-warning");
  if (warning) warning.hidden = !box.checked;
});

// The step's buttons are disabled while its form's own request is on its way (hx-disabled-elt,
// step.html), but htmx disables only those there as the request starts. A button another
// answer drew inside the form meanwhile (an example's panel with 填入该示例, a mount row with
// its 删除) came enabled: pressed, htmx held it for the form the step's answer then replaced,
// and the press was lost without a word. It is disabled too, until that request ends. Only the
// form's own request counts (htmx-request on the form): the idle counts' polling and a mount
// row's redraw are requests of elements inside it.
let disabledMeanwhile = [];
document.addEventListener("htmx:load", function (event) {
  const form = document.getElementById("wizard-form");
  const drawn = event.target;
  if (!form || !form.classList.contains("htmx-request") || !(drawn instanceof Element)) return;
  const stepButtons = form.getAttribute("hx-disabled-elt");
  for (const button of [drawn, ...drawn.querySelectorAll(stepButtons)]) {
    if (button.matches(stepButtons) && !button.disabled) {
      button.disabled = true;
      disabledMeanwhile.push(button);
    }
  }
});
document.addEventListener("htmx:afterRequest", function (event) {
  // requestConfig.elt: once the answer replaced the form, the event comes from its parent.
  // Not when another page is on its way (a language switch): they stay off as the step's own.
  const request = event.detail.requestConfig;
  if (!request || request.elt.id !== "wizard-form" || event.detail.keepIndicators) return;
  disabledMeanwhile.forEach((button) => {
    button.disabled = false;
  });
  disabledMeanwhile = [];
});

// 查看示例: the example it shows goes with the step's form only while it is open (the hidden
// `example`, drawn disabled, _image.html), so a row button or a refused 下一步 draws the step
// again with the panel as the person left it. Set as the form is sent (caught before htmx
// reads the form): the panel's state is known only here, never to a page without JavaScript.
document.addEventListener(
  "submit",
  function () {
    const examples = document.getElementById("examples");
    const shown = document.getElementById("example-shown");
    if (examples && shown) shown.disabled = !examples.open;
  },
  true,
);

// A step sent for a draft discarded meanwhile (another tab) is answered 404 and nothing is saved.
// The form is then sent again as a plain POST, which the server answers as without JavaScript:
// the step as typed (secrets aside), saying the draft is gone, with 另存为新草稿
// (wizard_views._step_of_a_draft_gone). Until then the banner said to reload, and the reload
// lost what was typed. The pressed button goes with it (a language switch draws that page in
// the language chosen). Not the review's form (hidden): nothing is typed there.
document.addEventListener("htmx:responseError", function (event) {
  const form = event.detail.elt;
  if (!(form instanceof HTMLFormElement) || form.id !== "wizard-form" || form.hidden) return;
  const request = event.detail.requestConfig;
  if (event.detail.xhr.status !== 404 || !request || request.verb !== "post") return;
  const trigger = request.triggeringEvent;
  const button = trigger && trigger.submitter;
  if (button && button.name) {
    const pressed = document.createElement("input");
    pressed.type = "hidden";
    pressed.name = button.name;
    pressed.value = button.value;
    form.appendChild(pressed);
  }
  HTMLFormElement.prototype.submit.call(form);
});

// A tick offered only under conditions not met (BCCL, step 5) is aria-disabled rather than
// disabled, so that Tab reaches it and a screen reader reads why it is off (qa84): a click or
// Space does not tick it. One ticked already (sent so, the step refused it) can be unticked.
document.addEventListener("click", (event) => {
  const box = event.target;
  if (box instanceof HTMLInputElement && box.type === "checkbox" && box.checked
      && box.getAttribute("aria-disabled") === "true") {
    event.preventDefault();
  }
});
