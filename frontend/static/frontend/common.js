/* Helpers shared by the pages: calling the JSON API and reading its errors in plain words. */
"use strict";

window.reposearch = (function () {
  const SAFE_METHODS = ["GET", "HEAD", "OPTIONS"];

  /** The CSRF token Django expects back on every write the session makes: the page's meta tag
      (rendered with the page), else the `csrftoken` cookie. */
  function csrfToken() {
    const meta = document.querySelector("meta[name=csrf-token]");
    if (meta && meta.content) return meta.content;
    const cookie = document.cookie.split(";").map(function (part) { return part.trim(); })
      .find(function (part) { return part.startsWith("csrftoken="); });
    return cookie ? decodeURIComponent(cookie.slice("csrftoken=".length)) : "";
  }

  /** `fetch` options for `method`, with the CSRF header on unsafe methods. */
  function requestOptions(method, headers) {
    const options = { method: method, headers: Object.assign({}, headers), credentials: "same-origin" };
    if (!SAFE_METHODS.includes(method.toUpperCase())) options.headers["X-CSRFToken"] = csrfToken();
    return options;
  }

  /** Sends the session to the sign-in page (and back here) when the server says it ended. */
  function signInAgain(status) {
    if (status !== 401 || document.body.dataset.page === "sign-in") return;
    const back = window.location.pathname + window.location.search;
    window.location.assign("/sign-in?next=" + encodeURIComponent(back));
  }

  /** Calls the API; resolves to {ok, status, data}. Network failures become a readable error. */
  async function api(method, url, body) {
    const options = requestOptions(method, { Accept: "application/json" });
    if (body !== undefined) {
      options.headers["Content-Type"] = "application/json";
      options.body = JSON.stringify(body);
    }
    let response;
    try {
      response = await fetch(url, options);
    } catch (error) {
      return { ok: false, status: 0, data: null, message: "the server could not be reached" };
    }
    if (response.status === 401 && document.body.dataset.signedIn === "1") signInAgain(401);
    let data = null;
    if (response.status !== 204) {
      try { data = await response.json(); } catch (error) { data = null; }
    }
    return { ok: response.ok, status: response.status, data: data, message: errorMessage(response, data) };
  }

  /** POSTs `body` as JSON to one of the UI's HTML renderers; resolves to the `Response`. */
  async function postForHtml(url, body) {
    const options = requestOptions("POST", { "Content-Type": "application/json" });
    options.body = JSON.stringify(body);
    const response = await fetch(url, options);
    if (response.status === 401) signInAgain(401);
    return response;
  }

  /** The API's `error.message`, or something readable for responses that carry none. */
  function errorMessage(response, data) {
    if (response.ok) return "";
    if (data && data.error && data.error.message) return data.error.message;
    return "the server answered " + response.status + " " + (response.statusText || "");
  }

  function el(tag, attrs, children) {
    const node = document.createElement(tag);
    Object.entries(attrs || {}).forEach(function ([key, value]) {
      if (value === null || value === undefined || value === false) return;
      if (key === "text") node.textContent = value;
      else if (key === "className") node.className = value;
      else node.setAttribute(key, value === true ? "" : value);
    });
    (children || []).forEach(function (child) {
      if (child !== null && child !== undefined) node.append(child);
    });
    return node;
  }

  function formatBytes(bytes) {
    if (!bytes) return "0 B";
    const units = ["B", "KB", "MB", "GB"];
    let value = bytes;
    let unit = 0;
    while (value >= 1024 && unit < units.length - 1) { value /= 1024; unit += 1; }
    return (unit ? value.toFixed(1) : String(value)) + " " + units[unit];
  }

  function formatDuration(seconds) {
    if (!isFinite(seconds) || seconds < 0) return "";
    if (seconds < 60) return Math.max(1, Math.round(seconds)) + " s";
    if (seconds < 3600) return Math.round(seconds / 60) + " min";
    return (seconds / 3600).toFixed(1) + " h";
  }

  const PIPELINE_KEY = "reposearch.pipeline";

  function storedPipeline() {
    try { return localStorage.getItem(PIPELINE_KEY); } catch (error) { return null; }
  }

  /** Opens or keeps closed the pipeline drawings in `container` as the reader last left them. */
  function rememberPipeline(container) {
    container.querySelectorAll("details[data-pipeline]").forEach(function (drawing) {
      drawing.open = storedPipeline() === "open";
      drawing.addEventListener("toggle", function () {
        try { localStorage.setItem(PIPELINE_KEY, drawing.open ? "open" : "closed"); } catch (error) { /* private mode */ }
      });
    });
  }

  /** What /api/health says about the chat model: {available, reason}; unknown counts as available
      (a search then reports the failure in its pipeline). */
  function chatModelState(report) {
    const chat = report && report.models && report.models.chat;
    if (!chat) return { available: true, reason: "" };
    if (chat.provider === "none") {
      return { available: false, reason: "no chat model is configured (LLM_PROVIDER=none)" };
    }
    if (chat.reachable === false) {
      return { available: false, reason: "the chat model " + (chat.model || "") + " is unreachable" +
        (chat.error ? " (" + chat.error + ")" : "") };
    }
    return { available: true, reason: "" };
  }

  /** Calls `onChange(state)` with the chat model's state now and whenever health says it changed:
      re-checked every 10 s while it is down, every minute while it is up. */
  function watchChatModel(onChange) {
    let last = null;
    async function check() {
      const answer = await api("GET", "/api/health");
      const state = answer.data ? chatModelState(answer.data) : { available: true, reason: "" };
      if (!last || last.available !== state.available || last.reason !== state.reason) {
        last = state;
        onChange(state);
      }
      setTimeout(check, state.available ? 60000 : 10000);
    }
    check();
  }

  /** The LLM checkboxes `names` of `form`: disabled (with the reason as their title) while the
      chat model is down, keeping what the reader wanted to give it back when the model answers.
      `onChange(state)` says so on the page. `set(name, on)` sets a checkbox, disabled or not;
      `checked` resolves once health has answered the first time. */
  function modelOptions(form, names, onChange) {
    function set(name, on) {
      const input = form.elements[name];
      if (input.disabled) input.dataset.wanted = on ? "1" : "";
      else input.checked = on;
    }
    const checked = new Promise(function (resolve) {
      watchChatModel(function (state) {
        names.forEach(function (name) {
          const input = form.elements[name];
          if (!state.available && !input.disabled) {
            input.dataset.wanted = input.checked ? "1" : "";
            input.checked = false;
            input.disabled = true;
          } else if (state.available && input.disabled) {
            input.disabled = false;
            input.checked = input.dataset.wanted === "1";
          }
          const label = input.closest("label");
          label.classList.toggle("unavailable", !state.available);
          label.title = state.available ? "" : "Unavailable: " + state.reason;
        });
        onChange(state);
        resolve();
      });
    });
    return { set: set, checked: checked };
  }

  return { api: api, postForHtml: postForHtml, csrfToken: csrfToken, el: el, formatBytes: formatBytes, formatDuration: formatDuration,
    rememberPipeline: rememberPipeline, modelOptions: modelOptions };
})();
