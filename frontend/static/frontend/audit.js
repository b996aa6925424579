/* Audit page: GET /api/audit with the page's filters, newest first, older pages on demand. */
"use strict";

(function () {
  const { api, el } = window.reposearch;
  const form = document.getElementById("audit-filters");
  const rows = document.getElementById("audit-rows");
  const empty = document.getElementById("audit-empty");
  const more = document.getElementById("audit-more");
  const statusLine = document.getElementById("audit-status");
  const PAGE = 50;

  function when(iso) {
    const date = new Date(iso);
    return isNaN(date.getTime()) ? iso : date.toISOString().slice(0, 19).replace("T", " ") + " UTC";
  }

  function renderRow(entry) {
    const details = entry.details && Object.keys(entry.details).length ? JSON.stringify(entry.details) : "";
    return el("tr", { "data-id": String(entry.id), "data-outcome": entry.outcome }, [
      el("td", { "data-label": "When", text: when(entry.at) }),
      el("td", { "data-label": "Who" }, [
        el("span", { text: entry.actor || "anonymous" }),
        entry.token_name ? el("div", { className: "muted small", text: "token " + entry.token_name }) : null,
      ]),
      el("td", { "data-label": "Action" }, [el("code", { text: entry.action })]),
      el("td", { "data-label": "Target", className: "audit-target", text: entry.target || "—" }),
      el("td", { "data-label": "From", text: entry.address || "—" }),
      el("td", { "data-label": "Outcome" }, [el("span", { className: "badge outcome-" + entry.outcome, text: entry.outcome })]),
      el("td", { "data-label": "Details" }, [details ? el("code", { className: "small", text: details }) : "—"]),
    ]);
  }

  function query(before) {
    const params = new URLSearchParams();
    ["actor", "action", "since", "until"].forEach(function (name) {
      const value = form.elements[name].value.trim();
      if (value) params.set(name, value);
    });
    params.set("limit", String(PAGE));
    if (before) params.set("before", String(before));
    return "/api/audit?" + params.toString();
  }

  async function load(before) {
    more.disabled = true;
    const answer = await api("GET", query(before));
    more.disabled = false;
    if (!answer.ok) {
      statusLine.textContent = "Could not read the audit log: " + answer.message;
      return;
    }
    const entries = answer.data.results || [];
    if (!before) rows.replaceChildren();
    entries.forEach(function (entry) { rows.appendChild(renderRow(entry)); });
    empty.hidden = rows.children.length > 0;
    more.hidden = !answer.data.next_before;
    more.dataset.before = answer.data.next_before || "";
    statusLine.textContent = rows.children.length + " entr" + (rows.children.length === 1 ? "y" : "ies") +
      (answer.data.next_before ? " (older ones below)" : "");
  }

  more.addEventListener("click", function () { load(more.dataset.before); });
  load(null);
})();
