// One memory in the Memory Bank: its text, authority, pin, use count, embedding state, who
// witnessed it, whether it is a secret (and who knows it: set here), and on demand its source
// block (with the passages of it the memory is also
// found by) and the turns that used it; edit and delete.
// Invariants:
// - A withdrawn or deleted memory is history: it shows its source and uses, never edit, pin
//   or delete buttons (the server refuses those anyway).
// - Which detail (source or turns) is open is kept by the panel (`open`, by memory id), so
//   a background refresh that redraws the list opens it again instead of closing it.
// - Every change asks the panel to refresh (`changed()`), so what is shown is what is stored.
import { h, fill, api, notify, attempt, emit, when, plural } from "./ui.js";
import { confirmButton, secretBadge, secretForm } from "./panel-kit.js";

const MEMORY_MAX = 2000;
const AUTHORITY = {
  accepted_story: ["established", "Stated by the story: the narrator treats it as fact."],
  heuristic: ["inference", "A guess the story suggests (probably, seems…): never told as fact."],
};
const OFF_PATH = {
  take: "an earlier take (retried)",
  undone: "undone",
  removed: "deleted from the story",
  active: "on another branch",
};

function sourceLabel(memory) {
  if (memory.origin === "user") return memory.writer === "player" ? "written by you" : "written by hand";
  const range = memory.source_start === memory.source_end
    ? `action ${memory.source_start}`
    : `actions ${memory.source_start}–${memory.source_end}`;
  return `from ${range}` + (memory.writer === "player" ? ", reworded by you" : "");
}

// Who was present throughout the actions it was written from, as the world's state says
// (derived by the server, never guessed); shown only where the server derived them.
function witnessLabel(memory) {
  if (!Array.isArray(memory.witnesses)) return null;
  return h("span", {
    class: "muted memory-witnesses",
    text: memory.witnesses.length ? `seen by ${memory.witnesses.join(", ")}` : "seen by no one else",
    title: "Who was present throughout the actions it was written from (you were there for all of it).",
  });
}

// A secret: the player said who knows it, whoever was there (docs/world.md, "Who knows what").
const SECRET_TITLE = "A character you address who is not named here is told it is a secret they were not told.";

function meta(memory) {
  const [authority, why] = AUTHORITY[memory.authority] || [memory.authority, ""];
  return h("div", { class: "row small memory-meta" },
    h("span", { class: `badge authority authority-${authority}`, text: authority, title: why }),
    memory.pinned ? h("span", { class: "badge pin-badge", text: "pinned", title: "Given to the narrator on every turn." }) : null,
    memory.status !== "active" ? h("span", { class: `badge status-${memory.status}`, text: memory.status }) : null,
    memory.stale ? h("span", {
      class: "badge stale", text: "stale",
      title: "Its source changed; it is rewritten in the background.",
    }) : null,
    h("span", {
      class: "memory-uses-count",
      text: memory.use_count ? `used ${memory.use_count}×` : "never used yet",
    }),
    h("span", {
      class: memory.embedded ? "embedded" : "not-embedded",
      text: memory.embedded ? "embedded" : "not embedded yet",
      title: memory.embedded
        ? "It has a vector: retrieval can find it by meaning."
        : "Waiting for the embedding model; until then only its words can match.",
    }),
    h("span", { class: "muted", text: sourceLabel(memory) }),
    witnessLabel(memory),
    secretBadge(memory.known_by, "memory-secret", SECRET_TITLE));
}

async function sourceDetail(memory) {
  const data = await api("GET", `/api/memories/${memory.id}/source`);
  const out = h("div", { class: "memory-source", attrs: { "aria-label": "Source block" } },
    h("h4", { text: "Source block" }));
  if (data.note) out.appendChild(h("p", { class: "muted small", text: `No source: ${data.note}.` }));
  for (const action of data.actions) {
    out.appendChild(h("blockquote", { class: `source-action type-${action.type}` },
      h("span", { class: "muted small", text: `#${action.depth} · ${action.type}` }),
      h("p", { text: action.rendered })));
  }
  return h("div", { class: "memory-source-detail" }, out, evidenceDetail(data));
}

// The passages of the source block retrieval also matches the memory by, in story order; the
// one that matches goes into the context under the memory. With none, the server says why.
function evidenceDetail(data) {
  const evidence = Array.isArray(data.evidence) ? data.evidence : [];
  const out = h("div", { class: "memory-evidence", dataset: { state: data.evidence_state || "" },
    attrs: { "aria-label": "Passages it is found by" } },
  h("h4", { text: "Passages it is found by" }));
  if (!evidence.length) {
    out.appendChild(h("p", { class: "muted small evidence-note",
      text: data.evidence_note || "It has no passages of the story to be found by." }));
    return out;
  }
  const waiting = evidence.filter((e) => !e.embedded).length;
  out.appendChild(h("p", { class: "muted small evidence-intro", text:
    `${plural(evidence.length, "passage", "passages")} of its source block: when one matches the turn `
    + "better than the memory's own text, it goes into the context with the memory (if the "
    + "Memories budget has room and the memory does not already say it)"
    + (waiting ? `; ${waiting} not embedded yet, and not matched until they are.` : ".") }));
  out.appendChild(h("ol", { class: "evidence-list" }, evidence.map((passage) => h("li", {
    class: "evidence" + (passage.embedded ? "" : " is-waiting"),
    dataset: { keyId: passage.id, depth: passage.depth },
  },
    h("div", { class: "row small muted" },
      h("span", { class: "evidence-where", text: `action ${passage.depth}` }),
      h("span", {
        class: passage.embedded ? "embedded" : "not-embedded",
        text: passage.embedded ? "embedded" : "not embedded yet",
        title: passage.embedded
          ? "It has a vector: retrieval can find the memory through it by meaning."
          : "Waiting for the embedding model: retrieval does not use it until it is embedded.",
      })),
    h("p", { class: "evidence-text", text: passage.text })))));
  return out;
}

async function usesDetail(memory, headReplyId) {
  const data = await api("GET", `/api/memories/${memory.id}/uses`);
  const out = h("div", { class: "memory-turns", attrs: { "aria-label": "Turns that used it" } },
    h("h4", { text: "Turns that used it" }));
  if (!data.uses.length) {
    out.appendChild(h("p", { class: "muted small", text: "No reply has used this memory yet." }));
    return out;
  }
  out.appendChild(h("ul", { class: "turn-list" }, data.uses.map((use) => h("li", {
    class: "row small" + (use.on_path ? "" : " off-path"), dataset: { replyId: use.id },
  },
    h("span", { class: "turn-label", text: `Reply #${use.depth}` }),
    h("span", { class: "muted", text: when(use.created_at) }),
    use.id === headReplyId ? h("span", { class: "badge this-turn", text: "this turn" }) : null,
    use.on_path ? null : h("span", { class: "badge", text: OFF_PATH[use.state] || use.state }),
    h("span", { class: "spacer" }),
    h("button", {
      type: "button", class: "link", text: "Insights",
      attrs: { "aria-label": `Open Insights for reply #${use.depth}` },
      on: { click: () => emit("open-insights", { actionId: use.id, depth: use.depth }) },
    })))));
  return out;
}

/** The list item for `memory`. options: used (used by the newest reply), headReplyId,
 * open (Map id -> "source" | "uses"), changed() (refresh the panel), watch() (follow the
 * background work an edit schedules). */
export function memoryItem(memory, { used, headReplyId, open, changed, watch }) {
  const alive = memory.status === "active" || memory.status === "forgotten";
  const item = h("li", {
    class: ["memory", `status-${memory.status}`, memory.pinned ? "pinned" : "", used ? "used" : ""]
      .filter(Boolean).join(" "),
    dataset: { memoryId: memory.id },
  });
  const text = h("p", { class: "memory-text", text: memory.text });
  const detail = h("div", { class: "memory-detail" });

  async function showDetail(kind) {
    if (open.get(memory.id) === kind && detail.childElementCount) {
      open.delete(memory.id);
      fill(detail);
      return;
    }
    open.set(memory.id, kind);
    const box = await attempt(() => (kind === "source" ? sourceDetail(memory) : usesDetail(memory, headReplyId)));
    if (box && open.get(memory.id) === kind) fill(detail, box);
  }

  async function patch(body, message) {
    const stored = await api("PATCH", `/api/memories/${memory.id}`, body);
    notify(message);
    changed();
    return stored;
  }

  function edit() {
    const area = h("textarea", { value: memory.text, rows: 3, attrs: { "aria-label": "Memory text", maxlength: MEMORY_MAX } });
    const form = h("form", {
      class: "editor", dataset: { editing: "1" },
      on: {
        submit: async (event) => {
          event.preventDefault();
          const done = await attempt(() => patch({ text: area.value }, "Memory saved."));
          if (done === undefined) return;
          close();
          watch();
        },
      },
    }, area, h("div", { class: "row" },
      h("button", { type: "submit", class: "primary", text: "Save memory" }),
      h("button", { type: "button", text: "Cancel", on: { click: close } })));
    function close() {
      delete form.dataset.editing;
      form.replaceWith(text);
      document.dispatchEvent(new Event("tk:panel-idle"));
    }
    text.replaceWith(form);
    area.focus();
  }

  // Who knows it: names separated by commas; none for a secret only the player keeps.
  function secret() {
    const shown = item.querySelector(".secret-form");
    if (shown) return shown.querySelector("input").focus();
    detail.before(secretForm({
      knownBy: memory.known_by, className: "memory-secret-form",
      onSave: (known) => patch({ known_by: known },
        known ? "Memory marked as a secret." : "Memory no longer a secret."),
    }));
  }

  const actions = h("div", { class: "row memory-actions" },
    alive ? h("button", {
      type: "button", class: "small", text: memory.pinned ? "Unpin" : "Pin",
      attrs: {
        "aria-pressed": memory.pinned ? "true" : "false",
        "aria-label": memory.pinned ? "Unpin this memory" : "Pin this memory",
        title: "A pinned memory is given to the narrator on every turn.",
      },
      on: {
        click: () => attempt(() => patch({ pinned: !memory.pinned },
          memory.pinned ? "Memory unpinned." : "Memory pinned.")),
      },
    }) : null,
    alive ? h("button", {
      type: "button", class: "small", text: "Edit", attrs: { "aria-label": "Edit this memory" },
      on: { click: edit },
    }) : null,
    alive ? h("button", {
      type: "button", class: "small", text: "Secret",
      attrs: { "aria-label": "Say who knows this memory" }, on: { click: secret },
    }) : null,
    h("button", {
      type: "button", class: "small", text: "Source",
      attrs: { "aria-label": "Show the source block" }, on: { click: () => showDetail("source") },
    }),
    h("button", {
      type: "button", class: "small", text: `Turns (${memory.used_by.length})`,
      attrs: { "aria-label": "Show the turns that used it" }, on: { click: () => showDetail("uses") },
    }),
    h("span", { class: "spacer" }),
    alive ? confirmButton({
      label: "Delete", question: "Delete this memory?", confirmLabel: "Yes, delete",
      ariaLabel: "Delete this memory",
      onConfirm: async () => {
        await api("DELETE", `/api/memories/${memory.id}`);
        notify("Memory deleted.");
        changed();
      },
    }) : null);

  fill(item, text, meta(memory), actions, detail);
  const kind = open.get(memory.id);
  if (kind) {
    open.delete(memory.id); // showDetail toggles: reopen from closed
    showDetail(kind);
  }
  return item;
}
