/* Settings page: GET /api/config fills the form; Save sends only the changed fields with PUT. */
"use strict";

(function () {
  const { api, el } = window.reposearch;
  const form = document.getElementById("config-form");
  const loading = document.getElementById("config-loading");
  const errorLine = document.getElementById("config-error");
  const savedLine = document.getElementById("config-saved");
  const EDITABLE = ["provider", "chat_model", "embedding_provider", "embedding_model", "embedding_dim"];
  let current = null;

  function fill(config) {
    current = config;
    EDITABLE.forEach(function (name) {
      const value = config[name];
      form.elements[name].value = value === null || value === undefined ? "" : String(value);
      form.elements[name].removeAttribute("aria-invalid");
    });
    form.elements.base_url.value = config.base_url || "";
    document.getElementById("api_key_set").value = config.api_key_set ? "set" : "not set";
    document.getElementById("embedding_space").value = config.embedding_space || "";
  }

  function changes() {
    const changed = {};
    EDITABLE.forEach(function (name) {
      const raw = form.elements[name].value.trim();
      let value = raw === "" ? null : raw;
      if (name === "embedding_dim" && value !== null) value = Number(value);
      const before = current[name] === undefined ? null : current[name];
      if (value !== before) changed[name] = value;
    });
    return changed;
  }

  async function load() {
    const answer = await api("GET", "/api/config");
    if (!answer.ok) {
      loading.textContent = "Could not load the configuration: " + answer.message;
      loading.classList.add("error");
      return;
    }
    fill(answer.data);
    loading.hidden = true;
    form.hidden = false;
  }

  async function loadHealth() {
    const list = document.getElementById("health");
    const answer = await api("GET", "/api/health");
    const report = answer.data || {};
    const items = [];
    ["database", "broker", "workers"].forEach(function (name) {
      const part = report[name];
      if (!part) return;
      items.push([name, part.ok ? "ok" + (part.count ? " (" + part.count + ")" : "") : (part.error || "down"), part.ok]);
    });
    const models = report.models || {};
    if (models.embedding) {
      const e = models.embedding;
      items.push(["embedding model", e.loaded || e.available ? (e.model + " · ready") : (e.error || "not loaded"), Boolean(e.loaded || e.available)]);
    }
    if (models.cross_encoder) {
      const x = models.cross_encoder;
      const served = x.provider !== "local";
      items.push(["cross-encoder", served ? "a rerank server" + (x.model ? " (" + x.model + ")" : "") + " · asked at each search" : (x.loaded || x.available ? x.model + " · ready" : (x.error || "not loaded")), served || Boolean(x.loaded || x.available)]);
    }
    if (models.chat) {
      const c = models.chat;
      items.push(["chat model", c.provider === "none" ? "off (provider none)" : (c.reachable ? c.model + " · reachable" : (c.error || "unreachable")), c.provider === "none" || Boolean(c.reachable)]);
    }
    if (!items.length) items.push(["health", answer.message || "unknown", false]);
    list.replaceChildren.apply(list, items.flatMap(function ([name, text, ok]) {
      return [el("dt", { text: name }), el("dd", { className: ok ? "ok" : "warn", text: text })];
    }));
  }

  form.addEventListener("input", function () { savedLine.hidden = true; });
  const reset = document.getElementById("config-reset");
  if (reset) reset.addEventListener("click", function () {
    if (current) fill(current);
    errorLine.hidden = true;
  });

  form.addEventListener("submit", async function (event) {
    event.preventDefault();
    if (form.dataset.canConfigure !== "1") return;  // read-only for accounts below admin
    errorLine.hidden = true;
    savedLine.hidden = true;
    const changed = changes();
    if (!Object.keys(changed).length) {
      savedLine.textContent = "Nothing changed.";
      savedLine.hidden = false;
      return;
    }
    const answer = await api("PUT", "/api/config", changed);
    if (!answer.ok) {
      const fields = (answer.data && answer.data.error && answer.data.error.details && answer.data.error.details.fields) || {};
      Object.keys(fields).forEach(function (name) {
        if (form.elements[name]) form.elements[name].setAttribute("aria-invalid", "true");
      });
      errorLine.textContent = "Not saved: " + answer.message;
      errorLine.hidden = false;
      return;
    }
    fill(answer.data);
    savedLine.textContent = "Saved." + (answer.data.embedding_space_changed
      ? " The embedding model changed: re-index repositories to give them vectors for it (full-text search keeps working)." : "");
    savedLine.hidden = false;
    loadHealth();
  });

  load();
  loadHealth();
})();
