// Uploads on the Library page: files chosen or dropped go to POST /api/library one at a time,
// each with two bars: the bytes sent, then its passages embedded. Invariants:
// - The file is the raw request body, sent with XMLHttpRequest because only it reports the
//   upload's progress (`upload.onprogress`); nothing in the file is read here.
// - A file over the server's limit (the page's `data-file-max`, the guard's own figure) is
//   refused here before a byte is sent; every other refusal is the server's sentence, shown
//   in the file's line. A refused or cancelled file leaves nothing behind.
// - After the upload the line follows its source through the list the page polls
//   (`update`), so the embedding bar moves without a request of its own.
// - Files dropped anywhere on the page are uploaded, all of them; the browser never opens a
//   dropped file or follows a dropped link here. Text dropped in a text field stays its own.
import { h, fill, ApiError, plural } from "./ui.js";
import { embedProgress, stateBadge, failure, sizeText } from "./library-kit.js";

/** POST `file` as the raw body; `onProgress(sent, total)` while its bytes go up, `onSent()`
 * once they are all up. Resolves to the stored source; rejects with ApiError (its `code`
 * "cancelled" after `abort()`). Returns {promise, abort}. */
export function sendFile(file, { onProgress, onSent }) {
  const xhr = new XMLHttpRequest();
  const promise = new Promise((resolve, reject) => {
    xhr.open("POST", `/api/library?${new URLSearchParams({ filename: file.name })}`);
    xhr.setRequestHeader("Accept", "application/json");
    xhr.setRequestHeader("Content-Type", "application/octet-stream");
    xhr.upload.onprogress = (event) => {
      if (event.lengthComputable) onProgress(event.loaded, event.total);
    };
    xhr.upload.onload = () => onSent();
    xhr.onload = () => {
      let body = null;
      try {
        body = JSON.parse(xhr.responseText);
      } catch {
        body = null;
      }
      if (xhr.status === 201 && body) return resolve(body);
      const error = body && body.error ? body.error : null;
      if (xhr.status === 401 && error && error.code === "not_signed_in") {
        location.assign("/login?next=/library"); // the session ended: sign in, come back
      }
      reject(new ApiError(error && error.message ? error.message
        : `The server answered ${xhr.status} ${xhr.statusText || ""}`.trim() + ".",
      xhr.status, error ? error.code : "http_" + xhr.status, body));
    };
    xhr.onerror = () => reject(new ApiError("The file could not be sent: is Talekeeper still "
      + "running, and can the file still be read?", 0, "offline"));
    xhr.onabort = () => reject(new ApiError("Cancelled: nothing was kept.", 0, "cancelled"));
    xhr.send(file);
  });
  return { promise, abort: () => xhr.abort() };
}

/** The uploads list in `list`: `add(files)` queues files, `update(sources)` moves each stored
 * file's embedding bar; `onStored(source)` runs after each file is kept. */
export function uploader({ list, maxBytes, maxMb, onStored }) {
  const queue = [];
  const lines = [];
  let busy = false;

  function add(files) {
    for (const file of files) {
      const line = uploadLine(file);
      lines.push(line);
      list.appendChild(line.el);
      queue.push(line);
    }
    next();
  }

  async function next() {
    if (busy) return;
    const line = queue.shift();
    if (!line) return;
    busy = true;
    try {
      await line.send();
    } finally {
      busy = false;
      next();
    }
  }

  function update(sources) {
    const byId = new Map(sources.map((s) => [s.id, s]));
    for (const line of lines) line.follow(byId);
  }

  function uploadLine(file) {
    const el = h("li", { class: "lib-upload card", dataset: { phase: "waiting" } });
    const status = h("div", { class: "lib-upload-status" });
    const dismiss = h("button", {
      type: "button", class: "link", text: "Dismiss", hidden: true,
      attrs: { "aria-label": `Dismiss the line of ${file.name}` },
      on: {
        click: () => {
          el.remove();
          lines.splice(lines.indexOf(line), 1);
        },
      },
    });
    let abort = null;
    let cancelled = false;
    const cancel = h("button", {
      type: "button", class: "link", text: "Cancel",
      attrs: { "aria-label": `Cancel the upload of ${file.name}` },
      on: {
        click: () => {
          cancelled = true;
          if (abort) abort();
          else refused(new ApiError("Cancelled: nothing was sent.", 0, "cancelled"));
        },
      },
    });
    let source = null;
    fill(el,
      h("div", { class: "row lib-upload-head" },
        h("strong", { class: "lib-upload-name", text: file.name }),
        h("span", { class: "muted small", text: sizeText(file.size) }),
        h("span", { class: "spacer" }), cancel, dismiss),
      status);
    fill(status, h("p", { class: "muted small", text: "Waiting for the files before it…" }));

    function phase(name) {
      el.dataset.phase = name;
      const over = name === "refused" || name === "stored";
      cancel.hidden = name !== "waiting" && name !== "uploading";
      dismiss.hidden = !over;
    }

    function refused(error) {
      phase("refused");
      const cancelledNow = error && error.code === "cancelled";
      fill(status, h("div", { class: "lib-refusal", attrs: { role: cancelledNow ? "status" : "alert" } },
        h("p", { class: "lib-refusal-lead", text: cancelledNow
          ? `“${file.name}” was not uploaded.` : `“${file.name}” was not kept.` }),
        h("p", { class: "lib-refusal-message", text: error.message || String(error) })));
    }

    // The upload's bar: made once, moved by each progress event.
    const bar = h("progress", { class: "lib-upload-bar", max: 100, value: 0,
      attrs: { "aria-label": `Upload of ${file.name}` } });
    const barText = h("span", { class: "lib-upload-text" });
    const barRow = h("div", { class: "lib-progress row small" }, bar, barText);

    function uploading(sent, total) {
      const pct = total > 0 ? Math.round((sent / total) * 100) : 0;
      bar.value = pct;
      barText.textContent = `Uploading: ${pct}% of ${sizeText(total)}`;
      if (!barRow.isConnected) fill(status, barRow);
    }

    function reading() {
      phase("reading");
      bar.value = 100;
      barText.textContent = "Uploaded; reading it and splitting it into passages…";
      if (!barRow.isConnected) fill(status, barRow);
    }

    function show(found) {
      source = found;
      el.dataset.sourceId = String(found.id);
      el.dataset.state = found.state;
      const done = found.state === "ready" || found.state === "words_only";
      fill(status,
        h("p", { class: "row small lib-upload-kept" },
          h("span", { text: `Kept as “${found.title}”: ${plural(found.passage_count, "passage")}.` }),
          done ? null : stateBadge(found)),
        done ? null : embedProgress(found, `Embedding of ${file.name}`),
        failure(found),
        found.state === "ready"
          ? h("p", { class: "small lib-upload-done",
            text: "Ready: every passage is embedded and can be found by meaning and by words." })
          : found.state === "words_only"
            ? h("p", { class: "small muted lib-upload-done",
              text: "Found by words only: no embedding model is set (Settings)." })
            : null);
    }

    async function send() {
      if (cancelled) return;
      if (file.size > maxBytes) {
        refused(new ApiError(`It is ${sizeText(file.size)}; the library takes files up to `
          + `${maxMb} MB each. Split it into smaller files.`, 413, "too_large"));
        return;
      }
      phase("uploading");
      uploading(0, file.size);
      const request = sendFile(file, { onProgress: uploading, onSent: reading });
      abort = request.abort;
      let stored;
      try {
        stored = await request.promise;
      } catch (error) {
        refused(error);
        return;
      }
      phase("stored");
      show(stored);
      onStored(stored);
    }

    function follow(byId) {
      if (!source) return;
      const now = byId.get(source.id);
      if (now) show(now);
      else {
        fill(status, h("p", { class: "small muted", text: "Deleted from the library since." }));
        source = null;
      }
    }

    const line = { el, send, follow };
    return line;
  }

  return { add, update };
}

/** Files dragged over the page outline `zone` with a line saying a drop uploads them; a drop
 * anywhere on the page calls `onFiles(files)` with all of them. */
export function dropFiles(zone, onFiles) {
  const hint = h("div", { class: "drop-hint" },
    h("span", { class: "drop-hint-text", text: "Drop to add these files to the library" }));
  let depth = 0;
  const carriesFiles = (event) => Array.from((event.dataTransfer && event.dataTransfer.types) || []).includes("Files");
  const inField = (event) => {
    const el = event.target instanceof Element ? event.target : null;
    return !!el && (el.isContentEditable || !!el.closest("input, textarea, select"));
  };
  const show = () => {
    if (!hint.isConnected) {
      zone.classList.add("drop-target");
      zone.appendChild(hint);
    }
  };
  const hide = () => {
    depth = 0;
    zone.classList.remove("drop-target");
    hint.remove();
  };
  // Not files (text, a link): a text field takes it; anywhere else it does nothing.
  const refuse = (event) => {
    if (inField(event) || !event.dataTransfer) return;
    event.preventDefault();
    event.dataTransfer.dropEffect = "none";
  };
  document.addEventListener("dragenter", (event) => {
    if (!carriesFiles(event)) return refuse(event);
    event.preventDefault();
    depth += 1;
    show();
  });
  document.addEventListener("dragover", (event) => {
    if (!carriesFiles(event)) return refuse(event);
    event.preventDefault(); // never the browser's own "open the file"
    event.dataTransfer.dropEffect = "copy";
    show();
  });
  document.addEventListener("dragleave", (event) => {
    if (!carriesFiles(event)) return;
    depth -= 1;
    const out = event.clientX <= 0 || event.clientY <= 0
      || event.clientX >= window.innerWidth || event.clientY >= window.innerHeight;
    if (depth <= 0 || out) hide();
  });
  document.addEventListener("dragend", hide);
  document.addEventListener("drop", (event) => {
    if (!carriesFiles(event)) {
      hide();
      return refuse(event);
    }
    event.preventDefault();
    hide();
    const files = Array.from(event.dataTransfer.files || []);
    if (files.length) onFiles(files);
  });
}
