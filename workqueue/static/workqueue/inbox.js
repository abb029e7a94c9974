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
})();
