// Job page: keeps a replica's log tail on its newest line while it refreshes, unless the
// reader has scrolled up to read older lines.
"use strict";
(function () {
  let follow = true;
  // Where a reader scrolled to, kept through the tail's refresh, which draws a new box (at its
  // top and left otherwise, every 2 s): the line at the top of the view (its text, stamp
  // included, and how far below the box's top it was) and how far the box was scrolled sideways.
  let place = null;
  function logs() { return document.getElementById("log-lines"); }
  function topLine(pre) {
    const top = pre.getBoundingClientRect().top;
    for (const line of pre.children) {
      const box = line.getBoundingClientRect();
      if (box.bottom > top) return { text: line.textContent, offset: box.top - top };
    }
    return null;
  }
  function toBottom() {
    const pre = logs();
    if (pre && follow) { pre.scrollTop = pre.scrollHeight; }
  }
  function toPlace() {
    const pre = logs();
    if (!pre || !place) return;
    pre.scrollLeft = place.left;
    if (!follow && place.line) {
      // The same line, where it was; gone from the tail's last lines, the tail's oldest line.
      const line = Array.from(pre.children).find((l) => l.textContent === place.line.text);
      if (line) {
        pre.scrollTop += line.getBoundingClientRect().top - pre.getBoundingClientRect().top
          - place.line.offset;
      }
    }
    place = null;
  }
  document.addEventListener("DOMContentLoaded", toBottom);
  // Whether the reader is at the newest line, as they scroll: read at a refresh only, it was
  // stale for the Wrap lines switch, which took a reader who had scrolled up to the bottom.
  document.addEventListener("scroll", function (event) {
    const pre = event.target;
    if (pre.id === "log-lines") follow = pre.scrollHeight - pre.scrollTop - pre.clientHeight < 8;
  }, true);
  document.addEventListener("htmx:beforeSwap", function (event) {
    const pre = logs();
    const target = event.detail.target;
    if (pre && target && (target.id === "log-panel" || target.id === "log-tail")) {
      const clicked = event.detail.requestConfig && event.detail.requestConfig.elt.tagName === "A";
      if (target.id === "log-tail" && !clicked) sayNewLines(pre, event.detail.serverResponse);
      if (clicked) unsaid = 0;  // lines of the replica left, not of the one opened
      follow = clicked || pre.scrollHeight - pre.scrollTop - pre.clientHeight < 8;
      // Another replica's tab opens at its newest line; a refresh keeps the reader's place.
      place = clicked ? null : { left: pre.scrollLeft, line: follow ? null : topLine(pre) };
      if (target.id === "log-tail" && !clicked && document.activeElement === pre) {
        inPlace(event, pre);
      }
    }
  });
  // With focus in the log box (a keyboard user scrolling it), a refresh that drew a new box
  // moved focus to it (htmx keeps focus on an id), and a screen reader read the newly focused
  // box, the whole log, again every 2 s. Then the new lines go into the same box instead, and
  // the rest of the tail (its notes, the download link) is drawn again around it. Not the
  // tail of a job that has ended: the box kept here keeps its own refresh, which would go on
  // asking every 2 s for as long as focus stayed in it (review 26); that one new box is drawn.
  function inPlace(event, pre) {
    const answer = document.createElement("template");
    answer.innerHTML = event.detail.serverResponse;
    const lines = answer.content.getElementById("log-lines");
    const tail = answer.content.getElementById("log-tail");
    if (!lines || !tail || !tail.hasAttribute("hx-trigger")) return;
    event.detail.shouldSwap = false;
    while (pre.previousSibling) pre.previousSibling.remove();
    for (const node of Array.from(lines.parentNode.childNodes)) {
      if (node === lines) break;
      pre.before(node);
    }
    pre.replaceChildren(...lines.childNodes);
    pre.dataset.cut = lines.dataset.cut;  // as its lines' places are read (sayNewLines)
    toBottom();
    toPlace();
  }
  // 暂停刷新 (Pause updates, WCAG 2.2.2): while pressed the tail asks for nothing (its 2-second
  // refresh is refused before it is sent), so a line stays put to be read; pressed again, the
  // tail asks at once (its log-resumed trigger) and catches up. The choice is this page's, kept
  // through a replica's tab (the new tail is paused too). Shown here: without JavaScript the
  // page does not refresh itself. While paused it says 继续刷新 (Resume updates, qa108: it kept
  // its label, pressed or not). A button whose name says what it will do carries no
  // aria-pressed: the ARIA authoring practices' toggle keeps one name, or "pressed" would be
  // said with a name that no longer holds.
  const pause = document.getElementById("log-pause");
  let paused = false;
  if (pause) {
    const pauseLabel = pause.textContent;
    pause.hidden = false;
    pause.addEventListener("click", function () {
      paused = !paused;
      pause.textContent = paused ? pause.dataset.resumeLabel : pauseLabel;
      pause.classList.toggle("btn-secondary", paused);
      pause.classList.toggle("btn-outline-secondary", !paused);
      const tail = document.getElementById("log-tail");
      if (!paused && tail && tail.hasAttribute("hx-trigger")) htmx.trigger(tail, "log-resumed");
    });
  }
  document.addEventListener("htmx:confirm", function (event) {
    if (paused && event.detail.elt.id === "log-tail") event.preventDefault();
  });
  // Once the job has ended its tail comes back without a refresh (no hx-trigger): there is
  // nothing left to pause, and the button goes (review57: it stayed, pressable, doing nothing).
  // Focus on it goes to the log box, not to the page's top.
  document.addEventListener("htmx:afterSettle", function (event) {
    const target = event.detail.target;
    const tail = document.getElementById("log-tail");
    if (!pause || pause.hidden || !target || (target.id !== "log-panel" && target.id !== "log-tail")) return;
    if (!tail || tail.hasAttribute("hx-trigger")) return;
    const focused = document.activeElement === pause;
    pause.hidden = true;
    if (focused && logs()) logs().focus();
  });

  // A screen reader hears nothing of lines drawn into the box: each refresh that brings some
  // says how many, once, through a polite live region beside the heading ("新增 5 行"), while
  // focus is in the log (sayCount); one that brings none says nothing, and a paused tail asks
  // for nothing. A log file's lines say
  // where each starts in it (data-at): the new ones are those after the old tail's last line,
  // which may have been read before its end and grown since, and is still that line (review57).
  // By text, a job printing the same line again and again made the new tail look like the
  // old one, and its new lines were not counted (fix128). A cut of the file (data-cut changed)
  // moves its lines, and a platform's lines carry no place: then by text, below.
  function sayNewLines(pre, answer) {
    const said = document.getElementById("log-new-lines");
    const drawn = document.createElement("template");
    drawn.innerHTML = answer;
    const box = drawn.content.getElementById("log-lines");
    if (!said || !box) return;
    const lines = (root) => Array.from(root.querySelectorAll(".log-line"), (line) => ({
      text: line.textContent.replace(/\n$/, ""),
      at: line.dataset.at === undefined ? null : Number(line.dataset.at),
    }));
    const before = lines(pre);
    const now = lines(box);
    const count = pre.dataset.cut === box.dataset.cut ? newByPlace(before, now) : null;
    sayCount(said, count === null ? newByText(before, now) : count);
  }
  function newByPlace(before, now) {
    const last = before[before.length - 1];
    if (!last || last.at === null || now.some((line) => line.at === null)) return null;
    const at = now.findIndex((line) => line.at === last.at);
    if (at >= 0) return now.length - 1 - at;
    return now.every((line) => line.at > last.at) ? now.length : null;
  }
  // The new tail is the old one with its oldest lines dropped and the new ones after it: the
  // new lines are those past the longest run of the old tail's last lines that the new one
  // starts with. The old tail's last line may have been read before its end (a platform's log
  // read mid-line): by the next refresh it has grown, and is the same line if the new one at
  // its place begins with it (review57: no run matched, and the whole tail was said to be new).
  function newByText(before, now) {
    const same = (line, i, run) => now[i] !== undefined && (now[i].text === line.text
      || (i === run.length - 1 && now[i].text.startsWith(line.text)));
    let kept = before.length;
    while (kept > 0 && !before.slice(before.length - kept).every(same)) kept--;
    return now.length - kept;
  }
  // Said only while focus is in the log (its box, tabs and download link, or the buttons
  // beside its heading), not at every refresh of a job that prints for hours wherever the
  // reader is on the page (qa115: an endless stream). Elsewhere the lines are counted
  // silently, and the total is said once focus comes back. Not the search: its outcome is
  // what a reader there listens for. A count said empties the search's outcome, which was
  // said when it came and is still shown under the search box (qa115: a screen reader's
  // reading kept coming upon it in the live region).
  let unsaid = 0;
  function inLog(element) {
    return Boolean(element instanceof Element && !element.closest("#log-search")
      && (element.closest("#log-panel") || element.closest("#logs-heading")));
  }
  function sayCount(said, count) {
    if (count <= 0) return;
    if (!inLog(document.activeElement)) {
      unsaid += count;
      return;
    }
    sayTotal(said, unsaid + count);
  }
  function sayTotal(said, total) {
    unsaid = 0;
    const search = document.getElementById("log-search-said");
    if (search) search.textContent = "";
    said.textContent = total === 1 ? said.dataset.one : said.dataset.many.replace("%(n)s", total);
  }
  document.addEventListener("focusin", function (event) {
    const said = document.getElementById("log-new-lines");
    if (unsaid > 0 && said && inLog(event.target)) sayTotal(said, unsaid);
  });

  document.addEventListener("htmx:afterSettle", function (event) {
    // Only after the log box was drawn again: the status refresh beside it (every 2 s too)
    // took a reader who had just scrolled up back to the newest line.
    const target = event.detail.target;
    if (!target || (target.id !== "log-panel" && target.id !== "log-tail")) return;
    toBottom();
    toPlace();
  });

  // The status refresh draws the replica and usage tables again every 2 s: a table scrolled
  // sideways (on a phone) stays where it was scrolled to, instead of jumping back to its
  // first column under the reader's eyes. (htmx itself keeps focus on a box of the same id.)
  let scrolledAcross = null;
  let statusBefore = null;
  let actionBefore = null;
  // The job's buttons (停止, 复制, 删除...), which the status refresh draws again out of band.
  function actionButtons() {
    return Array.from(document.querySelectorAll("#job-actions button"));
  }
  function focusedAction() {
    const buttons = actionButtons();
    const index = buttons.indexOf(document.activeElement);
    return index < 0 ? null : index;
  }
  document.addEventListener("htmx:beforeSwap", function (event) {
    const target = event.detail.target;
    if (!target || target.id !== "job-live") return;
    const status = document.getElementById("job-status");
    statusBefore = status && status.textContent.trim();
    actionBefore = focusedAction();
    scrolledAcross = new Map(
      Array.from(target.querySelectorAll("[role=region][id]")).map((box) => [box.id, box.scrollLeft]),
    );
    const focused = document.activeElement;
    if (focused && focused !== target && target.contains(focused) && focused.matches("[role=region][id]")) {
      swapAround(event, target, focused);
    }
  });

  // With focus on the replica (or usage) table's box, a keyboard user scrolling it, the refresh
  // drew a new box and htmx focused it (it keeps focus on an id): a screen reader took it for a
  // new focus and read the table's name again every 2 s. Then the refresh is drawn around the
  // box instead: what is before and after it at each level is replaced, and the box keeps its
  // element (and so its focus) with the new rows in it. A refresh that changes what the status
  // area itself is (the job ended: no more polling) is swapped as usual.
  function swapAround(event, live, keep) {
    const answer = document.createElement("template");
    answer.innerHTML = event.detail.serverResponse;
    const fresh = answer.content.getElementById("job-live");
    const freshKeep = fresh && fresh.querySelector("#" + CSS.escape(keep.id));
    if (!freshKeep || ["hx-get", "hx-trigger", "hx-swap"].some(
      (name) => fresh.getAttribute(name) !== live.getAttribute(name))) return false;
    const path = [];
    const freshPath = [];
    for (let node = keep; node !== live; node = node.parentElement) path.unshift(node);
    for (let node = freshKeep; node !== fresh; node = node.parentElement) freshPath.unshift(node);
    if (path.length !== freshPath.length
        || path.some((node, i) => node.tagName !== freshPath[i].tagName)) return false;
    event.detail.shouldSwap = false;
    fresh.remove();  // the rest of the answer: its out-of-band parts (actions, duration, metrics)
    const rest = answer.innerHTML.trim();
    path.forEach((node, i) => {
      const from = freshPath[i];
      const before = [];
      for (let sibling = from.parentNode.firstChild; sibling !== from; sibling = sibling.nextSibling) {
        before.push(sibling);
      }
      const after = [];
      for (let sibling = from.nextSibling; sibling; sibling = sibling.nextSibling) after.push(sibling);
      while (node.previousSibling) node.previousSibling.remove();
      while (node.nextSibling) node.nextSibling.remove();
      node.before(...before);
      node.after(...after);
      for (const attribute of Array.from(node.attributes)) {
        if (!from.hasAttribute(attribute.name)) node.removeAttribute(attribute.name);
      }
      for (const attribute of Array.from(from.attributes)) {
        if (node.getAttribute(attribute.name) !== attribute.value) {
          node.setAttribute(attribute.name, attribute.value);
        }
      }
    });
    keep.replaceChildren(...freshKeep.childNodes);
    // It kept its element, so its scroll too; set again, a scroll still gliding (an arrow key
    // pressed just before the answer came) would stop where it was when the refresh began.
    scrolledAcross.delete(keep.id);
    htmx.process(live);
    if (rest) htmx.swap(live, rest, { swapStyle: "none" });
    // Said as htmx says a swap, for what follows one (the tables' scroll, the status said).
    live.dispatchEvent(new CustomEvent("htmx:afterSwap", { bubbles: true, detail: { target: live, elt: live } }));
    return true;
  }

  document.addEventListener("htmx:afterSwap", afterLive);
  function afterLive() {
    if (!scrolledAcross) return;
    for (const [id, left] of scrolledAcross) {
      const box = document.getElementById(id);
      if (box) box.scrollLeft = left;
    }
    scrolledAcross = null;
    // A screen reader hears the job's status change (Running, then Succeeded) as it happens,
    // once: the refresh itself is silent.
    const status = document.getElementById("job-status");
    const said = document.getElementById("job-status-change");
    const now = status && status.textContent.trim();
    // With focus on a button the refresh took away (停止 once the job ended elsewhere), focus
    // fell to the page, and a keyboard user went on from its top (qa84): it goes to the button
    // now in its place (复制, or at the end 删除); htmx itself keeps it on one that stayed.
    let onStatus = false;
    const focusLost = !document.activeElement || document.activeElement === document.body;
    if (actionBefore !== null && focusLost) {
      const buttons = actionButtons();
      const instead = buttons[Math.min(actionBefore, buttons.length - 1)];
      if (instead) {
        instead.focus();
      } else if (status) {
        status.focus();  // tabindex=-1; it is read as it takes focus
        onStatus = true;
      }
    }
    actionBefore = null;
    if (said && now && statusBefore && now !== statusBefore && !onStatus) {
      said.textContent = said.dataset.said.replace("%(status)s", now);
    }
    statusBefore = null;
  }

  // A search refused as too many of the person's are running (429, jobs.views._log_search)
  // comes with its section, saying so beside the words typed: drawn like any answer, where
  // htmx would leave an error answer undrawn.
  document.addEventListener("htmx:beforeSwap", function (event) {
    if (event.detail.xhr.status !== 429) return;
    if (!event.detail.target || event.detail.target.id !== "log-search") return;
    event.detail.shouldSwap = true;
    event.detail.isError = false;
  });

  // A search (or a page of its matches) draws its section anew, its summary too: what it found,
  // or what was wrong with it, is said through a live region that stays.
  document.addEventListener("htmx:afterSwap", function (event) {
    if (!event.detail.target || event.detail.target.id !== "log-search") return;
    const said = document.getElementById("log-search-said");
    if (!said) return;
    const outcome = document.querySelectorAll(
      "#log-search-summary, #log-search-error, #log-search-before-error, #log-search-q-error, #log-search-context-error",
    );
    said.textContent = Array.from(outcome, (part) => part.textContent.replace(/\s+/g, " ").trim()).join(" ");
  });

  // While a search is on its way, the page links of the results it will replace (更早的匹配,
  // 最新的匹配) are off: shown so (aria-disabled, greyed by console.css), and a click or Enter
  // on one sends nothing. They belong to the words searched before, and the form and these
  // links take turns on the section (hx-sync replace): one pressed then threw the new search
  // away, and its page came with the words before in the box, those just typed gone without a
  // word. The search's answer draws the section anew; if it fails they are on again. Their
  // hrefs stay: without JavaScript each is the page it names.
  function searchOnItsWay(section) {
    const form = section.querySelector("#log-search-form");
    return Boolean(form && form.classList.contains("htmx-request"));  // set by htmx meanwhile
  }
  function markSearchPages(event) {
    const form = event.detail.elt;
    if (form.id !== "log-search-form") return;
    const section = form.closest("#log-search");
    if (!section) return;
    const off = searchOnItsWay(section);
    section.querySelectorAll("#log-search-older, #log-search-newest").forEach(function (link) {
      if (off) link.setAttribute("aria-disabled", "true");
      else link.removeAttribute("aria-disabled");
    });
  }
  document.addEventListener("htmx:beforeSend", markSearchPages);
  document.addEventListener("htmx:afterRequest", markSearchPages);
  document.addEventListener("htmx:confirm", function (event) {
    const link = event.detail.elt;
    const section = link.closest("#log-search");
    if (link.tagName === "A" && section && searchOnItsWay(section)) event.preventDefault();
  });

  // 自动换行 (Wrap lines): the tail's and the search results' long lines wrap inside their box.
  // The choice is this browser's (localStorage), for every job page; a class on <html> keeps it
  // through each refresh and tab swap. Not chosen yet, it is on below the md width, off above:
  // on a phone a line scrolled sideways shows a few words at a time (qa85). The page is served
  // without it, so without JavaScript (the switch stays hidden then) lines scroll sideways, as
  // they always did.
  const WRAP_KEY = "console.logWrap";
  const wrapSwitch = document.getElementById("log-wrap");
  if (wrapSwitch) {
    let on = window.matchMedia("(max-width: 767.98px)").matches;
    try {
      const chosen = localStorage.getItem(WRAP_KEY);
      if (chosen === "on" || chosen === "off") on = chosen === "on";
    } catch (e) { /* storage blocked */ }
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
  // A big job's previous/next link (left33): to the same link in the new panel, or, at the
  // first or last replica where it is gone, to the list's Show log button.
  document.addEventListener("htmx:afterSettle", function (event) {
    const elt = event.detail.requestConfig && event.detail.requestConfig.elt;
    if (event.detail.target && event.detail.target.id === "log-panel" && elt && elt.tagName === "A") {
      const tab = document.querySelector("#log-panel .nav-link.active") ||
        (elt.id && document.getElementById(elt.id)) ||
        document.getElementById("log-replica-show");
      if (tab) { tab.focus(); }
    }
  });
})();
