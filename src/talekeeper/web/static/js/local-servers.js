// The model servers running on this machine (GET /api/settings/detect), each model with a
// button that switches the player's narrator to it in one click. Used by the settings page
// and by the adventures page while the narrator is the built-in placeholder. Invariants:
// - The server does the looking (loopback only, the usual ports, never Talekeeper's own):
//   the page sends no address of its own choosing.
// - What a server names its models reaches the page as text only (`h`/textContent).
// - A switch is an ordinary save (PATCH /api/settings): the endpoint URL, the model, and an
//   empty API key, so a key saved for another endpoint is never sent to a local server.
//   The server's answer (its message on a refusal) is shown; nothing else changes.
import { h, fill, api, notify } from "./ui.js";

const KINDS = {
  ollama: "Ollama",
  "lm-studio": "LM Studio",
  "llama.cpp": "llama.cpp",
  koboldcpp: "KoboldCpp",
  vllm: "vLLM",
  "openai-compatible": "An OpenAI-compatible server",
};
const BUTTONS = 8; // models shown as buttons; the rest of a long list is a picker

/** Fill `root` with the servers found; `onUsed(saved)` runs after a switch was saved. */
export function localServers(root, {
  onUsed = () => {}, current = () => null, otherwise = "enter an endpoint in Settings",
} = {}) {
  const status = h("p", { class: "small muted", attrs: { "aria-live": "polite" } });
  const list = h("div", { class: "local-servers" });
  const again = h("button", { type: "button", class: "link", text: "Look again",
    on: { click: () => look() } });
  let found = [];

  async function use(server, model, button) {
    button.disabled = true;
    try {
      const saved = await api("PATCH", "/api/settings",
        { endpoint_url: server.url, model, api_key: "" });
      onUsed(saved);
      fill(list, found.map(serverItem)); // "(in use)" moves to the model just chosen
      status.textContent = `Now narrating with ${model} at ${server.url}.`;
      notify(`Narrator: ${model}`);
    } catch (error) {
      status.textContent = `Nothing was switched: ${error.message}`;
    } finally {
      button.disabled = false;
    }
  }

  function modelButton(server, model) {
    const inUse = current() && current().endpoint_url === server.url && current().model === model;
    const button = h("button", { type: "button", class: inUse ? "" : "primary",
      text: inUse ? `${model} (in use)` : `Use ${model}`, disabled: Boolean(inUse),
      attrs: { "aria-label": `Use ${model} from ${KINDS[server.kind] || server.kind}` } });
    button.addEventListener("click", () => use(server, model, button));
    return button;
  }

  function serverItem(server) {
    const name = KINDS[server.kind] || server.kind;
    const shown = server.models.slice(0, BUTTONS);
    const rest = server.models.slice(BUTTONS);
    let picker = null;
    if (rest.length) {
      const select = h("select", { attrs: { "aria-label": `More models from ${name}` } },
        rest.map((m) => h("option", { value: m, text: m })));
      const go = h("button", { type: "button", text: "Use this one" });
      go.addEventListener("click", () => use(server, select.value, go));
      picker = h("div", { class: "row" }, select, go);
    }
    return h("div", { class: "local-server", dataset: { url: server.url } },
      h("h3", { text: `${name} at ${server.url}` }),
      h("div", { class: "row local-server-models" }, shown.map((m) => modelButton(server, m))),
      picker);
  }

  async function look() {
    again.disabled = true;
    status.textContent = "Looking for model servers on this machine…";
    fill(list);
    try {
      found = await api("GET", "/api/settings/detect");
      if (!found.length) {
        status.textContent = "No model server answered on this machine's usual ports "
          + "(Ollama 11434, LM Studio 1234, llama.cpp 8080, KoboldCpp 5001, vLLM 8000). "
          + `Start one and look again, or ${otherwise}.`;
      } else {
        status.textContent = found.length === 1
          ? "One model server is running on this machine:"
          : `${found.length} model servers are running on this machine:`;
        fill(list, found.map(serverItem));
      }
    } catch (error) {
      found = [];
      status.textContent = `Could not look for model servers: ${error.message}`;
    } finally {
      again.disabled = false;
    }
  }

  fill(root, status, list, h("p", { class: "small" }, again));
  look();
  return { look };
}
