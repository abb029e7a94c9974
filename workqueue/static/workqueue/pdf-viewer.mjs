// The PDF viewer (issue 26), in a frame sandboxed without allow-same-origin: an opaque origin that
// can read nothing of the site. The work item page (previews.js) sends the document's bytes by
// postMessage; PDF.js draws one page at a time with its text layer (selectable text). No script of
// the document runs: the library without its scripting sandbox, isEvalSupported false, no XFA, and
// the frame's CSP allows this server's modules only. The reading runs on this thread (PDF.js's
// worker module imported here), since a sandboxed frame cannot start a worker from this server.
import * as pdfjs from "../pdfjs/build/pdf.min.mjs";
import * as pdfjsWorker from "../pdfjs/build/pdf.worker.min.mjs";

globalThis.pdfjsWorker = pdfjsWorker;

const ZOOMS = [0.5, 0.67, 0.8, 0.9, 1, 1.1, 1.25, 1.5, 1.75, 2, 2.5, 3, 4];
const $ = (id) => document.getElementById(id);
const pdfjsBase = new URL("../pdfjs/", import.meta.url).href;
const state = { doc: null, number: 1, scale: null, fit: true, rendering: null, pending: null, firstShown: false };

function tell(message) {
  window.parent.postMessage({ pdfViewer: message }, "*");
}

function setStatus(text, failed = false) {
  $("status").textContent = text;
  $("status").classList.toggle("failed", failed);
}

function fitScale(page) {
  const width = $("pages").clientWidth - 24;
  const natural = page.getViewport({ scale: 1 }).width;
  return Math.max(0.25, Math.min(4, width / natural));
}

function showControls() {
  const { doc, number } = state;
  $("page-number").textContent = String(number);
  $("page-count").textContent = String(doc.numPages);
  $("previous").disabled = number <= 1;
  $("next").disabled = number >= doc.numPages;
  $("zoom-out").disabled = state.scale <= ZOOMS[0];
  $("zoom-in").disabled = state.scale >= ZOOMS[ZOOMS.length - 1];
  $("fit").disabled = false;
  $("zoom").textContent = `${Math.round(state.scale * 100)} %`;
}

async function render(number) {
  if (state.rendering) {
    state.pending = number;
    return;
  }
  state.rendering = number;
  try {
    const page = await state.doc.getPage(number);
    if (state.fit || state.scale === null) state.scale = fitScale(page);
    const viewport = page.getViewport({ scale: state.scale });
    const ratio = window.devicePixelRatio || 1;
    const holder = document.createElement("div");
    holder.className = "page";
    holder.dataset.pageNumber = String(number);
    holder.style.width = `${Math.floor(viewport.width)}px`;
    holder.style.height = `${Math.floor(viewport.height)}px`;
    holder.style.setProperty("--total-scale-factor", String(viewport.scale * (viewport.userUnit || 1)));
    const canvas = document.createElement("canvas");
    canvas.width = Math.floor(viewport.width * ratio);
    canvas.height = Math.floor(viewport.height * ratio);
    canvas.setAttribute("role", "img");
    canvas.setAttribute("aria-label", `Page ${number}`);
    const text = document.createElement("div");
    text.className = "textLayer";
    holder.append(canvas, text);
    await page.render({
      canvas,
      viewport,
      transform: ratio === 1 ? null : [ratio, 0, 0, ratio, 0, 0],
      annotationMode: pdfjs.AnnotationMode.DISABLE,
    }).promise;
    await new pdfjs.TextLayer({ textContentSource: page.streamTextContent(), container: text, viewport }).render();
    $("page").replaceWith(holder);
    holder.id = "page";
    state.number = number;
    showControls();
    setStatus("");
    if (!state.firstShown) {
      state.firstShown = true;
      tell({ shown: true, page: number, pages: state.doc.numPages, at: performance.now() });
    } else {
      tell({ page: number, pages: state.doc.numPages });
    }
  } catch (error) {
    fail();
    return;
  } finally {
    state.rendering = null;
  }
  if (state.pending !== null) {
    const next = state.pending;
    state.pending = null;
    render(next);
  }
}

function fail() {
  setStatus("Preview unavailable: the file could not be read as a PDF.", true);
  tell({ failed: true });
}

function go(number) {
  if (!state.doc) return;
  const target = Math.max(1, Math.min(state.doc.numPages, number));
  if (target !== state.number || !state.firstShown) render(target);
}

function zoom(step) {
  if (!state.doc || state.scale === null) return;
  const current = state.scale;
  const choices = step > 0 ? ZOOMS.filter((z) => z > current + 0.001) : ZOOMS.filter((z) => z < current - 0.001).reverse();
  if (!choices.length) return;
  state.fit = false;
  state.scale = choices[0];
  render(state.number);
}

async function open(data, page) {
  setStatus("Loading the PDF…");
  try {
    state.doc = await pdfjs.getDocument({
      data,
      isEvalSupported: false,
      enableXfa: false,
      stopAtErrors: false,
      standardFontDataUrl: `${pdfjsBase}standard_fonts/`,
      cMapUrl: `${pdfjsBase}cmaps/`,
      cMapPacked: true,
      wasmUrl: `${pdfjsBase}wasm/`,
    }).promise;
  } catch (error) {
    fail();
    return;
  }
  go(page || 1);
}

$("previous").addEventListener("click", () => go(state.number - 1));
$("next").addEventListener("click", () => go(state.number + 1));
$("zoom-in").addEventListener("click", () => zoom(1));
$("zoom-out").addEventListener("click", () => zoom(-1));
$("fit").addEventListener("click", () => { state.fit = true; render(state.number); });
document.addEventListener("keydown", (event) => {
  if (event.altKey || event.ctrlKey || event.metaKey) return;
  const keys = { ArrowLeft: -1, PageUp: -1, ArrowRight: 1, PageDown: 1 };
  if (event.key in keys) { go(state.number + keys[event.key]); event.preventDefault(); }
  else if (event.key === "Home") { go(1); event.preventDefault(); }
  else if (event.key === "End" && state.doc) { go(state.doc.numPages); event.preventDefault(); }
  else if (event.key === "+" || event.key === "=") { zoom(1); event.preventDefault(); }
  else if (event.key === "-") { zoom(-1); event.preventDefault(); }
  else if (event.key === "[" || event.key === "]") tell({ key: event.key });  // the page moves between files
});

window.addEventListener("message", (event) => {
  if (event.source !== window.parent || !event.data || typeof event.data !== "object") return;
  const { pdf, page, go: goTo, hello } = event.data;
  if (hello && !state.doc) tell({ ready: true });
  else if (pdf instanceof ArrayBuffer) open(new Uint8Array(pdf), Number(page) || 1);
  else if (Number.isInteger(goTo)) go(goTo);
  else if (pdf === null) fail();
});
tell({ ready: true });
