// The Summary panel: the Story Summary in force on this path, editable, and every version
// (newest first), marked automatic (written every few actions by the summary model) or the
// player's. Invariants: editing never rewrites a version — PUT .../summary adds the
// player's version, which is in force on this branch from then on; the list is what the
// server answers after the change.
import { h, fill, api, notify, when, plural } from "./ui.js";
import { block, editable, refresher } from "./panel-kit.js";

const SUMMARY_MAX = 20000;

function covers(version) {
  return version.covers_to < 0 ? "covers nothing yet" : `covers actions 0–${version.covers_to}`;
}

function versionItem(version, current) {
  const automatic = version.trigger !== "user"; // "interval": the summary pass wrote it
  const inForce = version.id === current;
  return h("li", {
    class: "summary-version" + (inForce ? " in-force" : ""),
    dataset: { versionId: version.id, trigger: version.trigger },
  },
    h("details", {},
      h("summary", {},
        h("span", {
          class: `badge ${automatic ? "trigger-auto" : "trigger-user"}`,
          text: automatic ? "automatic" : "written by you",
        }),
        " ",
        h("span", { class: "small", text: when(version.created_at) }),
        " ",
        h("span", { class: "muted small", text: covers(version) }),
        inForce ? h("span", { class: "badge in-force-badge", text: "in force" }) : null,
        version.stale ? h("span", { class: "badge stale", text: "stale" }) : null),
      h("p", { class: "small version-text", text: version.text || "(empty)" })));
}

export function summaryPanel(ctx) {
  const el = h("div", { class: "panel-body" });
  const url = () => `/api/adventures/${ctx.id}/summary`;

  const refresh = refresher(el, () => api("GET", url()), show);

  function show(data) {
    const versions = data.versions.slice().reverse();
    const status = data.current_version_id === null
      ? `No summary yet: the first is written automatically after action ${data.next_at}.`
      : `Covers the story up to action ${data.covers_to}; the next automatic update after action ${data.next_at}.`;
    fill(el,
      block("Story Summary",
        h("p", { class: "muted small summary-status", text: status }),
        data.stale
          ? h("p", { class: "note small", text: "Part of the story it covers changed; it is rewritten in the background." })
          : null,
        editable({
          label: "Summary in force",
          editLabel: "Edit the summary",
          text: data.text,
          placeholder: "Empty.",
          rows: 8,
          maxLength: SUMMARY_MAX,
          onSave: async (text) => {
            const saved = await api("PUT", url(), { text });
            notify("Summary saved as your version.");
            setTimeout(refresh, 0); // redraw the versions once the editor has closed
            return saved.text;
          },
        })),
      block("Versions",
        h("p", { class: "muted small", text: `${plural(versions.length, "version")}, newest first.` }),
        versions.length
          ? h("ol", { class: "summary-versions", attrs: { "aria-label": "Summary versions" } },
            versions.map((v) => versionItem(v, data.current_version_id)))
          : h("p", { class: "muted small", text: "No versions yet." })));
  }

  return { el, refresh };
}
