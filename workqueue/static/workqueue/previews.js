// Evidence previews on the work item and run pages (issue 26; templates/workqueue/_previews.html).
// - A PDF: this page reads the bytes from the file's signed URL (same origin, ?preview=1) and hands
//   them to the viewer in its sandboxed frame (pdf-viewer.mjs), which cannot read the site itself.
// - A picture: select it to enlarge it, again to shrink it.
// - Keys (never while typing in a field): [ and ] move between the files previewed.
// - A link to "#page=N" inside a preview's article (or data-preview-page) opens that page of its PDF.
(function () {
  "use strict";
  const frames = new Map(); // window of a viewer -> {frame, article, page}

  function article(frame) { return frame.closest("[data-preview]"); }

  function unavailable(entry) {
    entry.frame.hidden = true;
    const note = entry.article.querySelector("[data-preview-unavailable]");
    if (note) note.hidden = false;
    entry.article.dataset.previewFailed = "";
  }

  async function send(entry) {
    if (entry.sent) return;
    entry.sent = true;
    let data = null;
    try {
      const response = await fetch(entry.frame.dataset.pdfSrc, { credentials: "same-origin" });
      if (response.ok) data = await response.arrayBuffer();
    } catch (error) {
      data = null;
    }
    const target = entry.frame.contentWindow;
    if (!target) return;
    if (data) target.postMessage({ pdf: data, page: entry.page || 1 }, "*", [data]);
    else target.postMessage({ pdf: null }, "*");
  }

  window.addEventListener("message", function (event) {
    const entry = frames.get(event.source);
    const message = event.data && event.data.pdfViewer;
    if (!entry || !message || typeof message !== "object") return;
    if (message.ready) send(entry);
    if (message.failed) unavailable(entry);
    if (message.pages) {
      entry.article.dataset.pdfPages = String(message.pages);
      entry.article.dataset.pdfPage = String(message.page);
    }
    if (message.shown) {
      // This page's clock (from the navigation's start): what bench/previews.py reads.
      entry.article.dataset.pdfShownAt = String(performance.now());
      entry.article.dataset.pdfShown = "";
    }
    if (message.key === "[" || message.key === "]") moveBetweenFiles(message.key === "]" ? 1 : -1);
  });

  document.querySelectorAll("iframe[data-pdf-src]").forEach(function (frame) {
    const entry = { frame: frame, article: article(frame), page: 1, sent: false };
    frames.set(frame.contentWindow, entry);
    // The viewer says "ready" once its modules are loaded; one that said it before this script
    // ran says it again when greeted.
    frame.contentWindow.postMessage({ hello: true }, "*");
  });

  function goToPage(articleElement, page) {
    for (const entry of frames.values()) {
      if (entry.article === articleElement) {
        entry.page = page;
        if (entry.sent && entry.frame.contentWindow) entry.frame.contentWindow.postMessage({ go: page }, "*");
        articleElement.scrollIntoView({ block: "start" });
        entry.frame.focus();
      }
    }
  }

  document.addEventListener("click", function (event) {
    const enlarge = event.target.closest("[data-enlarge]");
    if (enlarge) {
      const open = enlarge.getAttribute("aria-expanded") === "true";
      enlarge.setAttribute("aria-expanded", open ? "false" : "true");
      enlarge.setAttribute("aria-label", enlarge.getAttribute("aria-label").replace(open ? ": shrink" : ": enlarge", open ? ": enlarge" : ": shrink"));
      return;
    }
    const pageLink = event.target.closest("[data-preview-page]");
    if (pageLink) {
      const target = document.getElementById("preview-" + pageLink.dataset.previewRef);
      if (target) {
        event.preventDefault();
        goToPage(target, Number(pageLink.dataset.previewPage) || 1);
      }
    }
  });

  function moveBetweenFiles(step) {
    const all = Array.from(document.querySelectorAll("[data-preview]"));
    if (!all.length) return;
    const here = all.findIndex(function (element) { return element.contains(document.activeElement) || element === document.activeElement; });
    const next = all[(here + step + all.length) % all.length] || all[0];
    next.scrollIntoView({ block: "start" });
    next.focus();
  }

  document.addEventListener("keydown", function (event) {
    if (event.altKey || event.ctrlKey || event.metaKey) return;
    const field = event.target.closest && event.target.closest("input, textarea, select, [contenteditable]");
    if (field) return;
    if (event.key === "[" || event.key === "]") {
      moveBetweenFiles(event.key === "]" ? 1 : -1);
      event.preventDefault();
    }
  });
})();
