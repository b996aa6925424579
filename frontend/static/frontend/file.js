// File and directory pages: line marks (#L10-L20, Shift+click for a range), the copy-permalink
// button, and on indexed files go to definition / find references through /api/symbols.
(function () {
  "use strict";
  const code = document.querySelector("[data-file-code]");
  const rangeLink = document.querySelector("[data-line-range]");
  const copyButton = document.querySelector("[data-copy-permalink]");
  const copied = document.querySelector("[data-copied]");
  let anchor = null; // the line a Shift+click range starts from
  let range = null; // [start, end] marked now

  function parseHash() {
    const match = /^#L(\d+)(?:-L(\d+))?$/.exec(window.location.hash);
    if (!match) return null;
    const start = parseInt(match[1], 10);
    const end = match[2] ? parseInt(match[2], 10) : start;
    return [Math.min(start, end), Math.max(start, end)];
  }

  function fragment() {
    if (!range) return "";
    return "#L" + range[0] + (range[1] > range[0] ? "-L" + range[1] : "");
  }

  function permalink() {
    const base = (copyButton && copyButton.dataset.permalink) || window.location.pathname;
    return window.location.origin + base + fragment();
  }

  function mark(newRange, scroll) {
    if (!code) return;
    code.querySelectorAll("tr.hit").forEach(function (row) { row.classList.remove("hit"); });
    range = newRange;
    if (!range) {
      if (rangeLink) rangeLink.hidden = true;
      return;
    }
    for (let line = range[0]; line <= range[1]; line += 1) {
      const row = document.getElementById("L" + line);
      if (row) row.classList.add("hit");
    }
    if (rangeLink) {
      rangeLink.hidden = false;
      rangeLink.href = fragment();
      rangeLink.textContent = range[1] > range[0] ? "lines " + range[0] + "–" + range[1] : "line " + range[0];
    }
    const first = document.getElementById("L" + range[0]);
    if (scroll && first) first.scrollIntoView({ block: "center" });
  }

  if (code) {
    mark(parseHash(), true);
    if (range) anchor = range[0];
    window.addEventListener("hashchange", function () { mark(parseHash(), true); });
    code.addEventListener("click", function (event) {
      const number = event.target.closest("a[data-line]");
      if (!number) return;
      event.preventDefault();
      const line = parseInt(number.dataset.line, 10);
      if (event.shiftKey && anchor !== null) {
        mark([Math.min(anchor, line), Math.max(anchor, line)], false);
      } else {
        anchor = line;
        mark([line, line], false);
      }
      window.history.replaceState(null, "", window.location.pathname + window.location.search + fragment());
    });
  }

  async function copyText(text) {
    if (navigator.clipboard && window.isSecureContext) {
      try { await navigator.clipboard.writeText(text); return true; } catch (error) { /* below */ }
    }
    const field = document.createElement("textarea");
    field.value = text;
    field.className = "offscreen";
    document.body.append(field);
    field.select();
    let done = false;
    try { done = document.execCommand("copy"); } catch (error) { done = false; }
    field.remove();
    return done;
  }

  if (copyButton) {
    copyButton.addEventListener("click", async function () {
      const url = permalink();
      copyButton.dataset.copiedUrl = url;
      const done = await copyText(url);
      if (copied) copied.textContent = done ? "Copied" : url;
    });
  }

  // -- go to definition / find references ------------------------------------------------
  if (!code || !("navigable" in code.dataset)) return;
  const panel = document.querySelector("[data-symbol-panel]");
  const nameBox = panel.querySelector("[data-symbol-name]");
  const status = panel.querySelector("[data-symbol-status]");
  const list = panel.querySelector("[data-symbol-results]");
  const NAME_CLASSES = ["n", "na", "nb", "bp", "nc", "nd", "ne", "nf", "fm", "nl", "nn", "nx", "py", "nv", "vc", "vg", "vi", "vm", "nt"];
  const IDENTIFIER = /^[A-Za-z_$][\w$]*$/;
  const el = window.reposearch.el;
  let current = "";

  function identifierAt(target) {
    const token = target.closest(".src span");
    if (!token || !code.contains(token)) return "";
    const text = token.textContent.trim();
    const named = NAME_CLASSES.some(function (name) { return token.classList.contains(name); });
    return named && IDENTIFIER.test(text) ? text : "";
  }

  function open(name) {
    current = name;
    nameBox.textContent = name;
    status.textContent = "";
    list.replaceChildren();
    panel.hidden = false;
  }

  code.addEventListener("click", function (event) {
    if (event.target.closest("a[data-line]")) return;
    const name = identifierAt(event.target);
    if (name && !window.getSelection().toString()) open(name);
  });
  panel.querySelector("[data-close-panel]").addEventListener("click", function () { panel.hidden = true; });

  function query(params) {
    return Object.entries(params).map(function ([key, value]) {
      return encodeURIComponent(key) + "=" + encodeURIComponent(value);
    }).join("&");
  }

  function item(url, location, detail, snippet) {
    return el("li", {}, [
      el("a", { href: url, className: "symbol-location", text: location }),
      detail ? el("span", { className: "symbol-detail", text: " " + detail }) : null,
      snippet ? el("pre", { className: "symbol-snippet", text: snippet }) : null,
    ]);
  }

  panel.querySelector("[data-go-definition]").addEventListener("click", async function () {
    const name = current;
    status.textContent = "Looking for the definition of " + name + "…";
    list.replaceChildren();
    const answer = await window.reposearch.api("GET", "/api/symbols/definitions?" +
      query({ name: name, repo: code.dataset.repoId, lang: code.dataset.lang }));
    if (name !== current) return;
    if (!answer.ok) { status.textContent = answer.message; return; }
    const hits = answer.data.results;
    if (hits.length === 1) { window.location.assign(hits[0].url); return; }
    status.textContent = hits.length ? hits.length + " definitions of " + name + (answer.data.truncated ? " (more not shown)" : "") :
      "No definition of " + name + " in the indexed code.";
    list.replaceChildren.apply(list, hits.map(function (hit) {
      const detail = [hit.kind, hit.container ? "in " + hit.container : "", hit.repository].filter(Boolean).join(" · ");
      return item(hit.url, hit.path + ":" + hit.start_line, detail, hit.snippet.split("\n")[0]);
    }));
  });

  panel.querySelector("[data-find-references]").addEventListener("click", async function () {
    const name = current;
    status.textContent = "Finding references to " + name + "…";
    list.replaceChildren();
    const answer = await window.reposearch.api("GET", "/api/symbols/references?" +
      query({ name: name, repo: code.dataset.repoId }));
    if (name !== current) return;
    if (!answer.ok) { status.textContent = answer.message; return; }
    const hits = answer.data.results;
    status.textContent = hits.length ? hits.length + " reference" + (hits.length === 1 ? "" : "s") + " to " + name +
      (answer.data.truncated ? " (more not shown)" : "") : "No references to " + name + " in this repository.";
    list.replaceChildren.apply(list, hits.map(function (hit) {
      return item(hit.url, hit.path + ":" + hit.line, hit.via === "call" ? "call" : "", hit.snippet.trim());
    }));
  });
})();
