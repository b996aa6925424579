/* Ask page: the URL holds the question and options; the answer is rendered by the server.
   The ask API streams (server-sent events): the retrieved snippets are listed as soon as they
   are found, the model's words appear as it writes them (as plain text), and the final event --
   the verified answer, or the error with the sources -- is rendered by the server as before.
   A rendered answer is kept in the history entry, so Back (or reopening the tab) shows it again
   without asking the model a second time; a shared link asks afresh. */
"use strict";

(function () {
  const form = document.getElementById("ask-form");
  const box = document.getElementById("question");
  const button = document.getElementById("ask-button");
  const answer = document.getElementById("answer");
  const status = document.getElementById("ask-status");
  const progress = document.getElementById("ask-progress");
  const options = document.getElementById("ask-options");
  const optionCount = document.getElementById("option-count");
  const repoList = document.getElementById("repo-options");
  const el = window.reposearch.el;
  // Checkboxes and their default state; only values that differ from it go in the URL.
  const FLAGS = { expand: false, hyde: false, tests: false, docs: false };
  const llmHint = document.getElementById("llm-hint");
  const modelWarning = document.getElementById("model-warning");
  const modelOptions = window.reposearch.modelOptions(form, ["hyde"], function (state) {
    llmHint.hidden = state.available;
    llmHint.textContent = state.available ? "" : "HyDE is off: " + state.reason + ". It comes back by itself when the model answers.";
    modelWarning.hidden = state.available;
    modelWarning.textContent = state.available ? "" : "No answers for now: " + state.reason +
      ". Asking still lists the snippets retrieval finds; see Settings.";
    updateOptionCount();
  });
  const emptyState = answer.innerHTML;
  let askCounter = 0;
  let ticker = null;
  let inflight = null;  // the AbortController of the ask being streamed
  let phase = "";  // what the status line says the ask is doing
  let sayPhase = function () {};

  function readForm() {
    const data = new FormData(form);
    const state = { q: (data.get("q") || "").trim(), repo: data.getAll("repo") };
    Object.keys(FLAGS).forEach(function (name) { state[name] = data.has(name); });
    return state;
  }

  function toParams(state) {
    const params = new URLSearchParams();
    if (state.q) params.set("q", state.q);
    state.repo.forEach(function (id) { params.append("repo", id); });
    Object.keys(FLAGS).forEach(function (name) {
      if (state[name] !== FLAGS[name]) params.set(name, state[name] ? "1" : "0");
    });
    return params;
  }

  function fillForm(params) {
    box.value = params.get("q") || "";
    const repos = params.getAll("repo");
    form.querySelectorAll("input[name=repo]").forEach(function (input) { input.checked = repos.includes(input.value); });
    // A link can name a repository this page does not list (deleted since): keep it, visibly,
    // so the API says it is unknown instead of the question silently going to every repository.
    const listed = Array.from(form.querySelectorAll("input[name=repo]"), function (input) { return input.value; });
    repos.filter(function (id) { return !listed.includes(id); }).forEach(function (id) {
      repoList.append(el("label", { className: "unknown-repo" }, [
        el("input", { type: "checkbox", name: "repo", value: id, checked: true }), " unknown repository " + id]));
    });
    Object.keys(FLAGS).forEach(function (name) {
      const value = params.get(name);
      modelOptions.set(name, value === null ? FLAGS[name] : value === "1");
    });
    updateOptionCount();
  }

  function updateOptionCount() {
    const state = readForm();
    const count = state.repo.length + Object.keys(FLAGS).filter(function (name) { return state[name] !== FLAGS[name]; }).length;
    optionCount.hidden = count === 0;
    optionCount.textContent = count ? count + " on" : "";
    if (count) options.open = true;
  }

  function apiRequest(state) {
    const request = { question: state.q, expand: state.expand, hyde: state.hyde };
    // Unchecked means "automatic": the server includes tests/docs when the question is about them.
    if (state.tests) request.include_tests = true;
    if (state.docs) request.include_docs = true;
    if (state.repo.length) request.repo_ids = state.repo;
    return request;
  }

  function setBusy(busy, question) {
    clearInterval(ticker);
    progress.hidden = !busy;
    button.disabled = busy;
    button.textContent = busy ? "Asking…" : "Ask";
    if (busy) {
      answer.setAttribute("aria-busy", "true");
      const started = performance.now();
      phase = "retrieving snippets, then waiting for the model…";
      const say = function () {
        const seconds = Math.floor((performance.now() - started) / 1000);
        status.textContent = "Asking “" + question + "”: " + phase + (seconds ? " " + seconds + " s" : "");
      };
      say();
      sayPhase = function (text) { phase = text; say(); };
      ticker = setInterval(say, 1000);
    } else {
      answer.removeAttribute("aria-busy");
    }
  }

  function showError(message) {
    answer.replaceChildren(el("div", { className: "panel error", role: "alert" }, [
      el("h1", { text: "The question could not be asked" }),
      el("p", { text: message }),
    ]));
  }

  function show(html, message) {
    answer.innerHTML = html;
    window.reposearch.rememberPipeline(answer);
    status.textContent = message;
  }

  /* Reads server-sent events from a fetch response; onEvent(name, data) returning false stops. */
  async function readEvents(response, onEvent) {
    const reader = response.body.getReader();
    const decoder = new TextDecoder();
    let buffer = "";
    for (;;) {
      const chunk = await reader.read();
      if (chunk.done) return;
      buffer += decoder.decode(chunk.value, { stream: true });
      let end = buffer.indexOf("\n\n");
      while (end !== -1) {
        const block = buffer.slice(0, end);
        buffer = buffer.slice(end + 2);
        let name = "message";
        const lines = [];
        block.split("\n").forEach(function (line) {
          if (line.startsWith("event:")) name = line.slice(6).trim();
          else if (line.startsWith("data:")) lines.push(line.slice(5).trim());
        });
        if (lines.length) {  // ": keep-alive" comments carry no data
          let data = null;
          try { data = JSON.parse(lines.join("\n")); } catch (error) { data = null; }
          if (onEvent(name, data) === false) { reader.cancel(); return; }
        }
        end = buffer.indexOf("\n\n");
      }
    }
  }

  /* The answer while it streams: the question, the model's text so far, the retrieved snippets. */
  function liveAnswer(question) {
    const text = el("p", { className: "live-text" });
    const list = el("ol", { className: "source-list retrieved" });
    const found = el("section", { className: "sources live-sources", "aria-label": "Retrieved snippets", hidden: true }, [
      el("h2", { text: "Retrieved snippets" }), list]);
    answer.replaceChildren(
      el("article", { className: "panel answer streaming", "data-outcome": "streaming", "aria-busy": "true" }, [
        el("h1", { className: "answer-question", text: question }),
        el("div", { className: "answer-text" }, [text])]),
      found);
    return {
      sources: function (snippets) {
        (Array.isArray(snippets) ? snippets : []).slice(0, 60).forEach(function (snippet) {
          const where = snippet.path + ":" + snippet.start_line + (snippet.end_line > snippet.start_line ? "-" + snippet.end_line : "");
          const href = typeof snippet.app_url === "string" && snippet.app_url.startsWith("/repos/") ? snippet.app_url : null;
          const label = "[" + snippet.context_number + "] " + (snippet.repo_name || "") + " " + where;
          list.append(el("li", { className: "source" }, [
            href ? el("a", { className: "file-link", href: href, text: label }) : label,
            snippet.symbol ? el("span", { className: "muted", text: " " + snippet.symbol }) : null]));
        });
        found.hidden = !list.children.length;
      },
      append: function (piece) { text.append(document.createTextNode(piece)); },
    };
  }

  function failedStatus(error) {
    return error && error.code === "model_bad_response" ? 502 : 503;
  }

  async function streamAnswer(state, ticket, controller) {
    const headers = { Accept: "text/event-stream", "Content-Type": "application/json", "X-CSRFToken": window.reposearch.csrfToken() };
    let response;
    try {
      response = await fetch(form.dataset.api, { method: "POST", credentials: "same-origin", headers: headers, body: JSON.stringify(apiRequest(state)), signal: controller.signal });
    } catch (error) {
      return { failed: controller.signal.aborted ? null : "the server could not be reached" };
    }
    const type = response.headers.get("Content-Type") || "";
    if (!response.ok || !type.startsWith("text/event-stream")) {
      let data = null;
      try { data = await response.json(); } catch (error) { data = null; }
      if (response.status === 401) window.location.assign("/sign-in?next=" + encodeURIComponent(location.pathname + location.search));
      const message = data && data.error && data.error.message ? data.error.message : "the server answered " + response.status;
      return { failed: message };
    }
    const live = liveAnswer(state.q);
    let final = null;
    try {
      await readEvents(response, function (name, data) {
        if (ticket !== askCounter) return false;
        if (name === "sources" && data) {
          live.sources(data.snippets);
          sayPhase((data.snippets || []).length + " snippets found; waiting for the model…");
        } else if (name === "delta" && data) {
          live.append(data.text);
          if (phase !== "the model is writing…") sayPhase("the model is writing…");
        } else if (name === "done" && data) {
          final = { payload: { question: state.q, response: data }, ok: true };
        } else if (name === "error" && data && data.error) {
          final = { payload: { question: state.q, error: data.error }, ok: false, status: failedStatus(data.error) };
        }
        return true;
      });
    } catch (error) {
      if (controller.signal.aborted) return { failed: null };
    }
    return final || { failed: "the answer stream ended before the answer was complete" };
  }

  async function ask(state) {
    const ticket = ++askCounter;
    stopStreaming();  // a newer question replaces the one streaming: the server stops its model
    if (!state.q) { setBusy(false); status.textContent = ""; return; }
    setBusy(true, state.q);
    const started = performance.now();
    const controller = new AbortController();
    inflight = controller;
    const outcome = await streamAnswer(state, ticket, controller);
    if (ticket !== askCounter) return;  // a newer question replaced this one
    inflight = null;
    if (outcome.failed !== undefined) {
      setBusy(false);
      status.textContent = "";
      if (outcome.failed) showError(outcome.failed);
      return;
    }
    let rendered;
    try {
      rendered = await window.reposearch.postForHtml(form.dataset.render, outcome.payload);
    } catch (error) {
      rendered = null;
    }
    if (ticket !== askCounter) return;
    setBusy(false);
    if (!rendered || !rendered.ok) {
      status.textContent = "";
      showError(rendered ? await rendered.text() : "the server could not be reached");
      return;
    }
    const seconds = ((performance.now() - started) / 1000).toFixed(1);
    const message = outcome.ok ? "Answered in " + seconds + " s" : "No answer (" + outcome.status + "): showing the retrieved sources";
    const html = await rendered.text();
    show(html, message);
    // Kept with this history entry: Back from a cited file shows the answer without a new model call.
    history.replaceState({ ask: { html: html, message: message } }, "", location.href);
  }

  function stopStreaming() {
    if (inflight) inflight.abort();
    inflight = null;
  }

  function restore(saved) {
    setBusy(false);
    stopStreaming();
    askCounter += 1;  // an ask still in flight must not overwrite what is restored
    show(saved.html, saved.message);
  }

  function highlightSource(event, on) {
    const link = event.target.closest && event.target.closest("a.cite");
    if (!link) return;
    const source = document.getElementById("source-" + link.dataset.source);
    if (source) source.classList.toggle("highlight", on);
  }

  form.addEventListener("submit", function (event) {
    event.preventDefault();
    const state = readForm();
    if (!state.q) { box.focus(); return; }
    const query = toParams(state).toString();
    const url = location.pathname + (query ? "?" + query : "");
    if (url !== location.pathname + location.search) history.pushState(null, "", url);
    document.title = state.q + " · Ask · reposearch";
    ask(state);
  });
  form.addEventListener("change", updateOptionCount);
  box.addEventListener("keydown", function (event) {
    if (event.key === "Enter" && !event.shiftKey && !event.isComposing) {
      event.preventDefault();
      if (!button.disabled) form.requestSubmit();
    }
  });
  answer.addEventListener("mouseover", function (event) { highlightSource(event, true); });
  answer.addEventListener("mouseout", function (event) { highlightSource(event, false); });
  answer.addEventListener("focusin", function (event) { highlightSource(event, true); });
  answer.addEventListener("focusout", function (event) { highlightSource(event, false); });

  document.addEventListener("keydown", function (event) {
    const target = event.target;
    const typing = target instanceof HTMLInputElement || target instanceof HTMLTextAreaElement || target instanceof HTMLSelectElement;
    if (event.key === "/" && !typing && !event.ctrlKey && !event.metaKey && !event.altKey) {
      event.preventDefault();
      box.focus();
      box.select();
    }
  });

  function load(saved) {
    const params = new URLSearchParams(location.search);
    fillForm(params);
    document.title = params.get("q") ? params.get("q") + " · Ask · reposearch" : "Ask · reposearch";
    if (saved && saved.ask) restore(saved.ask);
    else if (params.get("q")) ask(readForm());
    else { stopStreaming(); askCounter += 1; setBusy(false); show(emptyState, ""); }
  }

  window.addEventListener("popstate", function (event) { load(event.state); });
  if (location.search || history.state) {
    // A shared link asking for HyDE waits for health first, so it never waits on a dead model.
    const wantsModel = new URLSearchParams(location.search).get("hyde") === "1" && !(history.state && history.state.ask);
    (wantsModel ? modelOptions.checked : Promise.resolve()).then(function () { load(history.state); });
  }
})();
