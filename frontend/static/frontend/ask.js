/* Ask page: the URL holds the question and options; the answer is rendered by the server.
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
      const say = function () {
        const seconds = Math.floor((performance.now() - started) / 1000);
        status.textContent = "Asking “" + question + "”: retrieving snippets, then waiting for the model…" + (seconds ? " " + seconds + " s" : "");
      };
      say();
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

  async function ask(state) {
    const ticket = ++askCounter;
    if (!state.q) { setBusy(false); status.textContent = ""; return; }
    setBusy(true, state.q);
    const started = performance.now();
    const reply = await window.reposearch.api("POST", form.dataset.api, apiRequest(state));
    if (ticket !== askCounter) return;  // a newer question replaced this one
    const details = reply.data && reply.data.error && reply.data.error.details;
    const failedWithSources = (reply.status === 502 || reply.status === 503) && details;
    if (!reply.ok && !failedWithSources) {
      setBusy(false);
      status.textContent = "";
      showError(reply.message);
      return;
    }
    const payload = reply.ok ? { question: state.q, response: reply.data } : { question: state.q, error: reply.data.error };
    let rendered;
    try {
      rendered = await window.reposearch.postForHtml(form.dataset.render, payload);
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
    const message = reply.ok ? "Answered in " + seconds + " s" : "No answer (" + reply.status + "): showing the retrieved sources";
    const html = await rendered.text();
    show(html, message);
    // Kept with this history entry: Back from a cited file shows the answer without a new model call.
    history.replaceState({ ask: { html: html, message: message } }, "", location.href);
  }

  function restore(saved) {
    setBusy(false);
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
    else { askCounter += 1; setBusy(false); show(emptyState, ""); }
  }

  window.addEventListener("popstate", function (event) { load(event.state); });
  if (location.search || history.state) {
    // A shared link asking for HyDE waits for health first, so it never waits on a dead model.
    const wantsModel = new URLSearchParams(location.search).get("hyde") === "1" && !(history.state && history.state.ask);
    (wantsModel ? modelOptions.checked : Promise.resolve()).then(function () { load(history.state); });
  }
})();
