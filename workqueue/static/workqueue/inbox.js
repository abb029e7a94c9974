/* Small progressive enhancements; every page works without them. */
(function () {
  "use strict";

  // The browser's time zone, for the pages' times (the server uses it unless the person chose one).
  try {
    var zone = Intl.DateTimeFormat().resolvedOptions().timeZone;
    if (zone && /^[A-Za-z0-9_+\/-]+$/.test(zone) && document.cookie.split("; ").indexOf("tz=" + zone) === -1) {
      document.cookie = "tz=" + zone + "; path=/; max-age=31536000; SameSite=Lax" +
        (location.protocol === "https:" ? "; Secure" : "");
    }
  } catch (e) { /* no Intl: times stay in UTC */ }

  function offsetText(minutesEast) {
    var sign = minutesEast < 0 ? "-" : "+";
    var abs = Math.abs(minutesEast);
    var h = String(Math.floor(abs / 60)).padStart(2, "0");
    var m = String(abs % 60).padStart(2, "0");
    return sign + h + ":" + m;
  }

  // Datetime fields: default the UTC offset to the browser's offset at the chosen moment.
  document.querySelectorAll("select[data-local-offset]").forEach(function (select) {
    var input = select.parentElement.querySelector('input[type="datetime-local"]');
    if (!input) return;
    var touched = input.value !== "";
    select.addEventListener("change", function () { touched = true; });
    function sync() {
      if (touched) return;
      var when = input.value ? new Date(input.value) : new Date();
      if (isNaN(when.getTime())) return;
      var wanted = offsetText(-when.getTimezoneOffset());
      if (select.querySelector('option[value="' + wanted + '"]')) select.value = wanted;
    }
    input.addEventListener("change", sync);
    sync();
  });

  // Copy buttons: copy the text of the element named by data-copy.
  document.querySelectorAll("[data-copy]").forEach(function (button) {
    button.addEventListener("click", function () {
      var target = document.querySelector(button.getAttribute("data-copy"));
      var status = button.parentElement.querySelector(".copy-status");
      if (!target) return;
      var text = target.textContent;
      function done(ok) { if (status) status.textContent = ok ? "Copied." : "Select the text and copy it."; }
      if (navigator.clipboard && window.isSecureContext) {
        navigator.clipboard.writeText(text).then(function () { done(true); }, function () { done(false); });
      } else {
        var range = document.createRange();
        range.selectNodeContents(target);
        var selection = window.getSelection();
        selection.removeAllRanges();
        selection.addRange(range);
        var ok = false;
        try { ok = document.execCommand("copy"); } catch (e) { ok = false; }
        done(ok);
      }
    });
  });

  // Buttons that end something ask first.
  document.querySelectorAll("[data-confirm]").forEach(function (button) {
    button.addEventListener("click", function (event) {
      if (!window.confirm(button.getAttribute("data-confirm"))) event.preventDefault();
    });
  });

  // Selects that change what the page shows submit their form.
  document.querySelectorAll("select[data-autosubmit]").forEach(function (select) {
    select.addEventListener("change", function () { if (select.form) select.form.requestSubmit(); });
  });

  // A decision form is sent once: a second click while the first is in flight does nothing
  // (the requestId makes a resent form harmless anyway).
  document.querySelectorAll("form.decision-form").forEach(function (form) {
    form.addEventListener("submit", function (event) {
      if (form.dataset.sent === "1") { event.preventDefault(); return; }
      form.dataset.sent = "1";
      window.setTimeout(function () { form.dataset.sent = ""; }, 8000);
    });
  });
  // Row editors: add, remove and move rows in the page (the same buttons post the form without
  // JavaScript). Names, ids, labels and the buttons' names are renumbered from each element's
  // pattern ("….r{i}.c0", "Row {n}, Amount"), so every control of every row keeps its label.
  function renumber(repeat) {
    var rows = repeat.querySelectorAll("[data-row]");
    rows.forEach(function (row, index) {
      var i = String(index), n = String(index + 1);
      row.querySelectorAll("[data-name]").forEach(function (input) {
        input.name = input.getAttribute("data-name").replace("{i}", i);
      });
      row.querySelectorAll("[data-id]").forEach(function (el) { el.id = el.getAttribute("data-id").replace("{i}", i); });
      row.querySelectorAll("label[data-for]").forEach(function (label) {
        label.htmlFor = label.getAttribute("data-for").replace("{i}", i);
      });
      row.querySelectorAll("[data-text]").forEach(function (el) { el.textContent = el.getAttribute("data-text").replace("{n}", n); });
      row.querySelectorAll("[data-aria]").forEach(function (el) {
        el.setAttribute("aria-label", el.getAttribute("data-aria").replace("{n}", n));
      });
      row.querySelectorAll("[data-edit]").forEach(function (button) {
        var parts = button.value.split("|");
        if (parts.length === 3) button.value = parts[0] + "|" + parts[1] + "|" + index;
      });
      var up = row.querySelector('[data-edit="up"]');
      if (up) up.hidden = index === 0;
    });
    var count = repeat.querySelector("[data-count]");
    if (count) count.value = String(rows.length);
  }
  document.querySelectorAll("[data-repeat]").forEach(function (repeat) {
    repeat.addEventListener("click", function (event) {
      var button = event.target.closest("[data-edit]");
      if (!button || !repeat.contains(button)) return;
      var action = button.getAttribute("data-edit");
      var rows = repeat.querySelectorAll("[data-row]");
      var row = button.closest("[data-row]");
      if (action === "add_row") {
        if (!rows.length) return; // nothing to copy: let the server add it
        var fresh = rows[rows.length - 1].cloneNode(true);
        fresh.querySelectorAll("input").forEach(function (input) { input.value = ""; });
        fresh.querySelectorAll("select").forEach(function (select) { select.selectedIndex = 0; });
        rows[rows.length - 1].parentNode.appendChild(fresh);
        event.preventDefault();
        renumber(repeat);
        var first = fresh.querySelector("input, select");
        if (first) first.focus();
      } else if (action === "remove_row" && row) {
        event.preventDefault();
        if (rows.length === 1) {
          row.querySelectorAll("input").forEach(function (input) { input.value = ""; });
          row.querySelectorAll("select").forEach(function (select) { select.selectedIndex = 0; });
        } else {
          row.parentNode.removeChild(row);
        }
        renumber(repeat);
      } else if (action === "up" && row && row.previousElementSibling) {
        event.preventDefault();
        row.parentNode.insertBefore(row, row.previousElementSibling);
        renumber(repeat);
      }
    });
  });

  // Panels that are folded on phones open by themselves on wider screens.
  if (window.matchMedia && window.matchMedia("(min-width: 641px)").matches) {
    document.querySelectorAll("details[data-open-wide]").forEach(function (panel) { panel.open = true; });
  }

  // Bulk decisions: "select all on this page" (the header checkbox).
  function bindSelectAll(root) {
    root.querySelectorAll("[data-select-all]").forEach(function (all) {
      var form = all.closest("form") || root;
      var boxes = form.querySelectorAll('input[type="checkbox"][name="items"]');
      all.addEventListener("change", function () {
        boxes.forEach(function (box) { box.checked = all.checked; });
      });
      boxes.forEach(function (box) {
        box.addEventListener("change", function () {
          var checked = Array.prototype.filter.call(boxes, function (b) { return b.checked; }).length;
          all.checked = checked === boxes.length;
          all.indeterminate = checked > 0 && checked < boxes.length;
        });
      });
    });
  }
  bindSelectAll(document);

  // The inbox refreshes its list by itself, without a full reload, unless the person is busy with
  // it (a selection, a note being typed, focus inside): then only the counts change.
  var live = document.getElementById("inbox-live");
  if (live && window.fetch && window.DOMParser) {
    var seconds = parseInt(live.getAttribute("data-refresh-seconds"), 10) || 30;
    var busy = function () {
      if (live.contains(document.activeElement) && document.activeElement !== document.body) return true;
      if (live.querySelector('input[name="items"]:checked')) return true;
      var note = live.querySelector("#bulk-note");
      return !!(note && note.value);
    };
    var refresh = function () {
      if (document.hidden) return;
      fetch(live.getAttribute("data-refresh-url"), { credentials: "same-origin", headers: { "X-Requested-With": "fetch" } })
        .then(function (response) { return response.ok ? response.text() : null; })
        .then(function (html) {
          if (!html) return;
          var fresh = new DOMParser().parseFromString("<div>" + html + "</div>", "text/html").body.firstChild;
          fresh.querySelectorAll("[data-live-view-count]").forEach(function (figure) {
            var tab = document.querySelector('[data-view-count="' + figure.getAttribute("data-live-view-count") + '"]');
            if (tab) tab.textContent = figure.textContent;
          });
          if (busy()) {
            var counts = live.querySelector(".counts"), freshCounts = fresh.querySelector(".counts");
            if (counts && freshCounts) counts.replaceWith(freshCounts);
            return;
          }
          live.replaceChildren.apply(live, Array.prototype.slice.call(fresh.childNodes));
          bindSelectAll(live);
        })
        .catch(function () { /* offline for a moment: the next tick tries again */ });
    };
    window.setInterval(refresh, seconds * 1000);
  }

  // ---------------------------------------------------------------- busy submit buttons
  // A post form shows that it is on its way: its buttons are disabled, the one pressed says
  // "Working…", and the form is aria-busy. Disabled only after this event turn, so the pressed
  // button's name and value still go with the form.
  function setBusy(form, submitter, busy) {
    form.querySelectorAll('button[type="submit"], button:not([type]), input[type="submit"]').forEach(function (button) {
      button.disabled = busy;
    });
    if (busy) {
      form.setAttribute("aria-busy", "true");
      if (submitter && submitter.tagName === "BUTTON" && !submitter.classList.contains("visually-hidden")) {
        submitter.setAttribute("data-label", submitter.innerHTML);
        submitter.textContent = "Working…";
        submitter.setAttribute("aria-busy", "true");
      }
    } else {
      form.removeAttribute("aria-busy");
      form.querySelectorAll("[data-label]").forEach(function (button) {
        button.innerHTML = button.getAttribute("data-label");
        button.removeAttribute("data-label");
        button.removeAttribute("aria-busy");
      });
    }
  }
  document.addEventListener("submit", function (event) {
    var form = event.target;
    if (event.defaultPrevented || (form.getAttribute("method") || "").toLowerCase() !== "post") return;
    var submitter = event.submitter;
    window.setTimeout(function () { setBusy(form, submitter, true); }, 0);
    // A page that never answers: the buttons come back (the requestId makes a resend harmless).
    window.setTimeout(function () { setBusy(form, submitter, false); }, 15000);
  });
  // Back to a page kept in the browser's cache: nothing is in flight any more.
  window.addEventListener("pageshow", function (event) {
    if (event.persisted) document.querySelectorAll('form[aria-busy="true"]').forEach(function (form) { setBusy(form, null, false); });
  });

  // ---------------------------------------------------------------- decisions that need a note
  var note = document.getElementById("note");
  var noteStatus = document.getElementById("note-needed");
  function needsNote(button) {
    if (!note || !button.hasAttribute("data-needs-note") || note.value.trim()) return false;
    if (noteStatus) noteStatus.textContent = "A note is needed to " + button.textContent.trim().toLowerCase() +
      ": write why here, then press " + button.textContent.trim() + " again (or Ctrl+Enter).";
    note.setAttribute("aria-invalid", "true");
    note.focus();
    pending = button;
    return true;
  }
  var pending = null;  // the decision a person chose before writing its note
  document.querySelectorAll("button[data-needs-note]").forEach(function (button) {
    button.addEventListener("click", function (event) { if (needsNote(button)) event.preventDefault(); });
  });
  if (note) {
    note.addEventListener("input", function () {
      if (note.value.trim()) { note.removeAttribute("aria-invalid"); if (noteStatus) noteStatus.textContent = ""; }
    });
    note.addEventListener("keydown", function (event) {
      if (event.key === "Enter" && (event.ctrlKey || event.metaKey) && pending) { event.preventDefault(); pending.click(); }
    });
  }

  // ---------------------------------------------------------------- keyboard shortcuts
  // j/k (or the arrows once an item has focus) move through the inbox, o or Enter opens, a and r
  // open the item ready to approve or reject; on a work item a and r move to the decision and a
  // second press takes it. ? shows them all. None fires while a person types in a field.
  var help = document.getElementById("shortcut-help");
  document.querySelectorAll("[data-shortcut-help]").forEach(function (button) {
    button.hidden = false;
    button.addEventListener("click", function () { if (help && !help.open) help.showModal(); });
  });
  function typing(target) {
    if (!target || !target.closest) return false;
    if (target.isContentEditable) return true;
    var field = target.closest("input, textarea, select");
    if (!field) return false;
    return field.tagName !== "INPUT" ||
      ["checkbox", "radio", "button", "submit", "reset", "file", "range", "color"].indexOf(field.type) < 0;
  }
  function inboxRows() { return Array.prototype.slice.call(document.querySelectorAll("tr.inbox-row[data-work-item]")); }
  function currentRow(rows) {
    var active = document.activeElement && document.activeElement.closest ? document.activeElement.closest("tr.inbox-row") : null;
    return active || rows.filter(function (row) { return row.classList.contains("is-current"); })[0] || null;
  }
  function moveTo(row, rows) {
    rows.forEach(function (other) { other.classList.toggle("is-current", other === row); });
    var link = row.querySelector("a.item-link");
    if (link) { link.focus(); row.scrollIntoView({ block: "nearest" }); }
  }
  function decisionButton(which) {
    var ids = which === "approve" ? ["decide-approved", "decide-completed"] : ["decide-rejected", "decide-returned"];
    for (var i = 0; i < ids.length; i += 1) {
      var button = document.getElementById(ids[i]);
      if (button && !button.disabled) return button;
    }
    return null;
  }
  function decide(which) {
    var button = decisionButton(which);
    if (!button) return false;
    if (document.activeElement === button) { button.click(); return true; }
    if (needsNote(button)) return true;
    button.focus();
    button.scrollIntoView({ block: "center" });
    return true;
  }
  // Opened from the inbox with a or r: the decision is ready (focused), the second press takes it.
  var ready = /^#ready-(approve|reject)$/.exec(window.location.hash);
  if (ready) {
    var readyButton = decisionButton(ready[1]);
    if (readyButton && !needsNote(readyButton)) readyButton.focus();
    if (window.history.replaceState) window.history.replaceState(null, "", window.location.pathname + window.location.search);
  }
  document.addEventListener("keydown", function (event) {
    if (event.defaultPrevented || event.ctrlKey || event.metaKey || event.altKey || event.isComposing) return;
    if (help && help.open) return;  // the dialog's own keys (Escape closes it)
    if (typing(event.target)) return;
    var key = event.key, rows = inboxRows(), row = rows.length ? currentRow(rows) : null;
    var onRow = !!(document.activeElement && document.activeElement.closest && document.activeElement.closest("tr.inbox-row"));
    var handled = true;
    if (key === "?") {
      if (help) help.showModal();
    } else if (rows.length && (key === "j" || (key === "ArrowDown" && onRow))) {
      moveTo(row ? rows[Math.min(rows.indexOf(row) + 1, rows.length - 1)] : rows[0], rows);
    } else if (rows.length && (key === "k" || (key === "ArrowUp" && onRow))) {
      moveTo(row ? rows[Math.max(rows.indexOf(row) - 1, 0)] : rows[0], rows);
    } else if (row && (key === "o" || key === "a" || key === "r")) {
      var link = row.querySelector("a.item-link");
      if (!link) return;
      window.location.assign(link.href + (key === "a" ? "#ready-approve" : key === "r" ? "#ready-reject" : ""));
    } else if (!rows.length && (key === "a" || key === "r")) {
      handled = decide(key === "a" ? "approve" : "reject");
    } else if (key === "n" && document.querySelector("[data-next-item]")) {
      window.location.assign(document.querySelector("[data-next-item]").href);
    } else {
      handled = false;
    }
    if (handled) event.preventDefault();
  });
})();
