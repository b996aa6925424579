/* Search page: the URL holds the query and filters; results are rendered by the server. */
"use strict";

(function () {
  const form = document.getElementById("search-form");
  const box = document.getElementById("q");
  const results = document.getElementById("results");
  const status = document.getElementById("search-status");
  const filters = document.getElementById("filters");
  const filterCount = document.getElementById("filter-count");
  const LIMIT = 20;
  // Checkboxes and their default state; only values that differ from it go in the URL.
  const FLAGS = { bm25: true, vector: true, rerank: false, expand: false, tests: false, docs: false };
  const LLM_FLAGS = ["rerank", "expand"];
  const llmHint = document.getElementById("llm-hint");
  const modelOptions = window.reposearch.modelOptions(form, LLM_FLAGS, function (state) {
    llmHint.hidden = state.available;
    llmHint.textContent = state.available ? "" : "Rerank and query expansion are off: " + state.reason +
      ". They come back by themselves when the model answers (see Settings).";
  });
  let searchCounter = 0;

  function readForm() {
    const data = new FormData(form);
    const state = { q: (data.get("q") || "").trim(), repo: data.getAll("repo"), lang: data.getAll("lang"),
      path: (data.get("path") || "").trim() };
    Object.keys(FLAGS).forEach(function (name) { state[name] = data.has(name); });
    return state;
  }

  function toParams(state) {
    const params = new URLSearchParams();
    if (state.q) params.set("q", state.q);
    state.repo.forEach(function (id) { params.append("repo", id); });
    state.lang.forEach(function (lang) { params.append("lang", lang); });
    if (state.path) params.set("path", state.path);
    Object.keys(FLAGS).forEach(function (name) {
      if (state[name] !== FLAGS[name]) params.set(name, state[name] ? "1" : "0");
    });
    return params;
  }

  function fillForm(params) {
    box.value = params.get("q") || "";
    form.elements.path.value = params.get("path") || "";
    const repos = params.getAll("repo");
    const langs = params.getAll("lang");
    form.querySelectorAll("input[name=repo]").forEach(function (input) { input.checked = repos.includes(input.value); });
    form.querySelectorAll("input[name=lang]").forEach(function (input) { input.checked = langs.includes(input.value); });
    Object.keys(FLAGS).forEach(function (name) {
      const value = params.get(name);
      modelOptions.set(name, value === null ? FLAGS[name] : value === "1");
    });
    updateFilterCount();
  }

  function updateFilterCount() {
    const state = readForm();
    const count = state.repo.length + state.lang.length + (state.path ? 1 : 0) + (state.tests ? 1 : 0) + (state.docs ? 1 : 0);
    filterCount.hidden = count === 0;
    filterCount.textContent = count ? count + " on" : "";
    if (count) filters.open = true;
  }

  function apiRequest(state) {
    const request = { query: state.q, limit: LIMIT, use_bm25: state.bm25, use_vector: state.vector,
      use_rerank: state.rerank, use_expansion: state.expand, group_by: "file" };
    // Unchecked means "automatic": the server includes tests/docs when the query is about them.
    if (state.tests) request.include_tests = true;
    if (state.docs) request.include_docs = true;
    if (state.repo.length) request.repo_ids = state.repo;
    if (state.lang.length) request.languages = state.lang;
    const paths = state.path.split(",").map(function (p) { return p.trim(); }).filter(Boolean);
    if (paths.length) request.paths = paths;
    return request;
  }

  /** The server reads chunk texts from the index itself; sending them back could be megabytes. */
  function withoutContent(response) {
    const results = (response.results || []).map(function (result) {
      const slim = Object.assign({}, result);
      delete slim.content;
      if (Array.isArray(slim.chunks)) {  // a file's other chunks (group_by "file")
        slim.chunks = slim.chunks.map(function (chunk) {
          const rest = Object.assign({}, chunk);
          delete rest.content;
          return rest;
        });
      }
      return slim;
    });
    return Object.assign({}, response, { results: results });
  }

  /** The API's error; when it names a corrected query (`details.suggested_query`: a misspelt
   * filter, language or repository), a link that searches for it, the filters kept. */
  function showError(message, details) {
    const el = window.reposearch.el;
    const children = [el("h1", { text: "The search failed" }), el("p", { text: message })];
    const suggested = details && details.suggested_query;
    if (suggested) {
      const params = new URLSearchParams(window.location.search);
      params.set("q", suggested);
      children.push(el("p", { className: "suggestion" }, [
        "Search for ", el("a", { href: "?" + params.toString(), text: suggested }),
      ]));
    }
    results.replaceChildren(el("div", { className: "panel error", role: "alert" }, children));
  }

  /** The filter checkboxes count this search's result files (the API's `facets`): the files of
   * each repository and language among the results; none shown for a search without facets. */
  function showFacetCounts(facets) {
    const repos = {};
    const langs = {};
    if (facets) {
      (facets.repositories || []).forEach(function (row) { repos[row.repo_id] = row.files; });
      (facets.languages || []).forEach(function (row) { langs[row.language] = row.files; });
    }
    const plus = facets && facets.is_lower_bound ? "+" : "";
    form.querySelectorAll("[data-facet-repo]").forEach(function (span) {
      span.textContent = facets ? (repos[span.dataset.facetRepo] || 0) + plus : "";
    });
    form.querySelectorAll("[data-facet-lang]").forEach(function (span) {
      span.textContent = facets ? (langs[span.dataset.facetLang] || 0) + plus : "";
    });
  }

  /** Every mode pages with a cursor (exact and regex by file, hybrid by hit): "Load more"
   * sends it back and appends. */
  function addLoadMore(request, data) {
    const list = results.querySelector("ol.results");
    if (!data.next_cursor || !list) return;
    const noun = data.mode === "exact" || data.mode === "regex" ? "files" : "results";
    const button = window.reposearch.el("button", { type: "button", className: "load-more", text: "Load more " + noun });
    list.after(button);
    button.addEventListener("click", async function () {
      button.disabled = true;
      const next = Object.assign({}, request, { cursor: data.next_cursor });
      const answer = await window.reposearch.api("POST", form.dataset.api, next);
      if (!answer.ok) { button.disabled = false; button.textContent = "Load more failed: " + answer.message; return; }
      const offset = results.querySelectorAll(".result").length;
      const rendered = await window.reposearch.postForHtml(form.dataset.render,
        { request: next, response: withoutContent(answer.data), offset: offset });
      if (!rendered.ok) { button.disabled = false; button.textContent = "Load more failed"; return; }
      const holder = document.createElement("div");
      holder.innerHTML = await rendered.text();
      holder.querySelectorAll("ol.results > li").forEach(function (item) { list.appendChild(item); });
      button.remove();
      const count = results.querySelectorAll(".result").length;
      status.textContent = count + " of " + answer.data.total + (answer.data.total_is_lower_bound ? "+" : "") + " " + noun;
      addLoadMore(request, answer.data);
    });
  }

  /** "Show more matches": the next matching lines of one file (exact/regex), read with the
   * same query narrowed to the file (`file_path`, `match_offset`) and appended to its card. */
  async function showMoreMatches(button) {
    const card = button.closest(".result");
    button.disabled = true;
    const request = Object.assign(apiRequest(readForm()), {
      limit: 1, repo_ids: [button.dataset.repoId], file_path: button.dataset.path,
      match_offset: Number(button.dataset.offset),
    });
    const answer = await window.reposearch.api("POST", form.dataset.api, request);
    if (!answer.ok) { button.disabled = false; button.textContent = "Show more failed: " + answer.message; return; }
    const rendered = await window.reposearch.postForHtml(form.dataset.render,
      { request: request, response: withoutContent(answer.data) });
    if (!rendered.ok) { button.disabled = false; button.textContent = "Show more failed"; return; }
    const holder = document.createElement("div");
    holder.innerHTML = await rendered.text();
    const more = holder.querySelector(".result");
    const body = card.querySelector(".snippet tbody");
    if (more && body) {
      const after = Number(button.dataset.afterLine);
      more.querySelectorAll(".snippet tbody tr").forEach(function (row) {
        if (Number(row.querySelector(".ln").textContent) > after) body.appendChild(row);
      });
    }
    const next = more && more.querySelector(".more-matches");
    const paragraph = button.closest("p.more");
    if (next) paragraph.replaceWith(next.closest("p.more"));
    else paragraph.remove();
  }

  results.addEventListener("click", function (event) {
    const button = event.target.closest && event.target.closest("button.more-matches");
    if (button) showMoreMatches(button);
    // A facet adds its repo: / lang: filter to the query, a notice's suggestion puts the filter
    // that would match in place of one that matched no file; the other filters stay as they are.
    const facet = event.target.closest && event.target.closest("a.facet[data-query], a.suggestion[data-query]");
    if (facet && !event.ctrlKey && !event.metaKey && !event.shiftKey) {
      event.preventDefault();
      box.value = facet.dataset.query;
      form.requestSubmit();
    }
  });

  async function search(state) {
    const ticket = ++searchCounter;
    if (!state.q) { status.textContent = ""; return; }
    status.textContent = "Searching for “" + state.q + "”…";
    results.setAttribute("aria-busy", "true");
    const request = apiRequest(state);
    const started = performance.now();
    const answer = await window.reposearch.api("POST", form.dataset.api, request);
    if (ticket !== searchCounter) return;  // a newer search replaced this one
    if (!answer.ok) {
      results.removeAttribute("aria-busy");
      status.textContent = "";
      showFacetCounts(null);
      showError(answer.message, answer.data && answer.data.error && answer.data.error.details);
      return;
    }
    const rendered = await window.reposearch.postForHtml(form.dataset.render,
      { request: request, response: withoutContent(answer.data) });
    if (ticket !== searchCounter) return;
    results.removeAttribute("aria-busy");
    if (!rendered.ok) { status.textContent = ""; showError(await rendered.text()); return; }
    results.innerHTML = await rendered.text();
    showFacetCounts(answer.data.facets);
    window.reposearch.rememberPipeline(results);
    addLoadMore(request, answer.data);
    const count = results.querySelectorAll(".result").length;
    const seconds = ((performance.now() - started) / 1000).toFixed(2);
    status.textContent = count ? count + " result" + (count === 1 ? "" : "s") + " in " + seconds + " s" : "No results for “" + state.q + "”";
  }

  function resultNodes() { return Array.from(results.querySelectorAll(".result")); }

  function moveFocus(step) {
    const nodes = resultNodes();
    if (!nodes.length) return;
    const index = nodes.indexOf(document.activeElement);
    const next = index === -1 ? (step > 0 ? 0 : nodes.length - 1) : index + step;
    if (next < 0) { box.focus(); return; }
    if (next >= nodes.length) return;
    nodes[next].focus();
    nodes[next].scrollIntoView({ block: "nearest" });
  }

  form.addEventListener("submit", function (event) {
    event.preventDefault();
    const state = readForm();
    const query = toParams(state).toString();
    const url = location.pathname + (query ? "?" + query : "");
    if (url !== location.pathname + location.search) history.pushState(null, "", url);
    document.title = state.q ? state.q + " · reposearch" : "Search · reposearch";
    search(state);
  });
  form.addEventListener("change", function (event) {
    updateFilterCount();
    // A changed toggle or filter re-runs the current search, like most search pages do.
    if (event.target !== box && box.value.trim()) form.requestSubmit();
  });

  document.addEventListener("keydown", function (event) {
    const target = event.target;
    const typing = target instanceof HTMLInputElement || target instanceof HTMLTextAreaElement || target instanceof HTMLSelectElement;
    if (event.key === "/" && !typing && !event.ctrlKey && !event.metaKey && !event.altKey) {
      event.preventDefault();
      box.focus();
      box.select();
    } else if ((event.key === "ArrowDown" || event.key === "ArrowUp") && (target === box || target.classList.contains("result"))) {
      event.preventDefault();
      moveFocus(event.key === "ArrowDown" ? 1 : -1);
    } else if (event.key === "Enter" && target.classList && target.classList.contains("result")) {
      const link = target.querySelector("a.file-link");
      if (link) link.click();
    } else if (event.key === "Escape" && target.classList && target.classList.contains("result")) {
      box.focus();
    }
  });

  window.addEventListener("popstate", function () {
    const params = new URLSearchParams(location.search);
    fillForm(params);
    search(readForm());
  });

  const initial = new URLSearchParams(location.search);
  if (initial.toString()) {
    fillForm(initial);
    document.title = (initial.get("q") || "Search") + " · reposearch";
    // A shared link asking for an LLM stage waits for health first, so it never waits on a dead model.
    const wantsModel = LLM_FLAGS.some(function (name) { return initial.get(name) === "1"; });
    (wantsModel ? modelOptions.checked : Promise.resolve()).then(function () { search(readForm()); });
  }
})();
