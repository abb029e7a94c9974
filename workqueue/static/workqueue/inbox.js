/* Small progressive enhancements; every page works without them. */
(function () {
  "use strict";

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
})();
