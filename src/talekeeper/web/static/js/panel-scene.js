// The Scene panel: where the story is, who is present, and one line of what is happening.
// Invariants: the Scene is either the player's (set here, kept until they hand it back) or
// derived from the story (the world's location and who is present, else the story cards the
// newest actions mention; never stored, so it follows the story); the panel says which. It is part of the memory query, so it is worth keeping true.
import { h, fill, api, notify, attempt } from "./ui.js";
import { block, refresher, splitList } from "./panel-kit.js";

const LIMITS = { location: 200, summary: 300 };

export function scenePanel(ctx) {
  const el = h("div", { class: "panel-body" });
  const url = () => `/api/adventures/${ctx.id}/scene`;
  let scene = null;

  const refresh = refresher(el, () => api("GET", url()), (data) => {
    scene = data;
    show();
  });

  function show() {
    const byPlayer = scene.source === "player";
    fill(el, block("The Scene",
      h("p", { class: "muted small", text: "Where the story stands. It helps choose which memories the narrator is given." }),
      h("dl", { class: "scene-view" },
        h("dt", { text: "Location" }),
        h("dd", { class: "scene-location", text: scene.location || "—" }),
        h("dt", { text: "Present" }),
        h("dd", { class: "scene-present", text: scene.present.length ? scene.present.join(", ") : "—" }),
        h("dt", { text: "Happening" }),
        h("dd", { class: "scene-summary", text: scene.summary || "—" })),
      h("p", { class: "small scene-source" },
        h("span", { class: "badge", text: byPlayer ? "set by you" : "from the story" }),
        " ",
        byPlayer
          ? "It stays as you set it until you hand it back."
          : "It follows where the story says you are, and the cards the newest actions mention."),
      h("div", { class: "row" },
        h("button", { type: "button", text: "Set the scene", on: { click: edit } }),
        byPlayer
          ? h("button", {
            type: "button", class: "link", text: "Hand back to the story",
            on: {
              click: () => attempt(async () => {
                await save({ clear: true });
                show();
              }),
            },
          })
          : null)));
  }

  async function save(body) {
    scene = await api("PUT", url(), body);
    notify(body.clear ? "The story sets the scene again." : "Scene set.");
    return scene;
  }

  function edit() {
    const location = h("input", { type: "text", id: "scene-location", value: scene.location, attrs: { maxlength: LIMITS.location } });
    const present = h("input", {
      type: "text", id: "scene-present", value: scene.present.join(", "), placeholder: "e.g. Old Maren, the ferryman",
    });
    const summary = h("input", { type: "text", id: "scene-summary", value: scene.summary, attrs: { maxlength: LIMITS.summary } });
    const form = h("form", {
      class: "editor", dataset: { editing: "1" }, attrs: { "aria-label": "Set the scene" },
      on: {
        submit: async (event) => {
          event.preventDefault();
          const body = { location: location.value, present: splitList(present.value), summary: summary.value };
          if ((await attempt(() => save(body))) !== undefined) close();
        },
      },
    },
      h("label", { text: "Location", attrs: { for: "scene-location" } }), location,
      h("label", { text: "Who is present (comma-separated)", attrs: { for: "scene-present" } }), present,
      h("label", { text: "What is happening (one line)", attrs: { for: "scene-summary" } }), summary,
      h("div", { class: "row" },
        h("button", { type: "submit", class: "primary", text: "Save scene" }),
        h("button", { type: "button", text: "Cancel", on: { click: close } })));
    function close() {
      delete form.dataset.editing;
      show();
      document.dispatchEvent(new Event("tk:panel-idle"));
    }
    fill(el, form);
    location.focus();
  }

  return { el, refresh };
}
