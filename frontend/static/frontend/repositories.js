/* Repositories page: add, re-index, delete; the list follows /api/repos live (polling). */
"use strict";

(function () {
  const { api, el, formatBytes, formatDuration } = window.reposearch;
  const rows = document.getElementById("repo-rows");
  const empty = document.getElementById("repo-empty");
  const statusLine = document.getElementById("repo-status");
  const addForm = document.getElementById("add-form");
  const addError = document.getElementById("add-error");
  const dialog = document.getElementById("confirm");
  // Only accounts with the write role get the add form and the row buttons (the API refuses
  // the others anyway).
  const canWrite = document.getElementById("repo-table").dataset.canWrite === "1";
  const FAST_POLL_MS = 1000;
  const SLOW_POLL_MS = 8000;
  let pollTimer = null;

  function isActive(job) {
    return job && !["done", "completed_with_errors", "failed", "cancelled"].includes(job.state);
  }

  /** "about 2 min left" from the server's estimate (measured rates per stage), else "". */
  function timeLeft(job) {
    if (job.waiting) {  // the estimate leaves out the wait itself
      return job.eta_seconds >= 1 ? "then about " + formatDuration(job.eta_seconds) : "";
    }
    if (job.eta_seconds !== null && job.eta_seconds !== undefined) {
      return job.eta_seconds < 1 ? "finishing" : "about " + formatDuration(job.eta_seconds) + " left";
    }
    if (job.stage_eta_seconds !== null && job.stage_eta_seconds !== undefined && job.stage_eta_seconds >= 1) {
      return "about " + formatDuration(job.stage_eta_seconds) + " left in this stage";
    }
    return "";
  }

  function jobCell(repo) {
    const job = repo.current_job;
    if (!job) return [el("span", { className: "muted", text: "no job" })];
    if (!isActive(job)) {
      const parts = [el("span", { className: "muted", text: job.state.replace(/_/g, " ") +
        (job.duration_seconds ? " in " + formatDuration(job.duration_seconds) : "") })];
      if (job.failures && job.failures.length) {
        parts.push(el("span", { className: "warn", text: " · " + job.failures.length + " file(s) or batch(es) failed" }));
      }
      return parts;
    }
    const percent = Math.round((job.progress || 0) * 100);
    const counters = [];
    if (job.files_total) counters.push(job.files_done + "/" + job.files_total + " files");
    if (job.chunks_total) counters.push(job.chunks_embedded + "/" + job.chunks_total + " embedded");
    if (job.bytes_fetched) counters.push(formatBytes(job.bytes_fetched) + " fetched");
    const left = timeLeft(job);
    if (left) counters.push(left);
    const waiting = job.waiting ? job.waiting.reason : "";
    return [
      el("div", { className: "job-stage" }, [el("strong", { text: waiting ? "waiting" : job.state }), " ", el("span", { className: "muted", text: percent + "%" })]),
      el("progress", { max: "100", value: String(percent), "aria-label": repo.name + " indexing progress" }),
      waiting ? el("div", { className: "waiting small", text: waiting.replace(/^waiting: /, "") }) : null,
      el("div", { className: "muted small", text: counters.join(" · ") }),
    ];
  }

  function statusCell(repo) {
    const parts = [el("span", { className: "badge status-" + repo.status, text: repo.status })];
    const error = repo.error || (repo.current_job && repo.current_job.error);
    if (error && (repo.status === "failed" || (repo.current_job && repo.current_job.state === "failed"))) {
      parts.push(el("p", { className: "error small", text: error }));
    }
    const busy = isActive(repo.current_job);
    if (!busy && (repo.needs_reembedding || (repo.status === "ready" && repo.vectors_missing))) {
      parts.push(el("p", { className: "warn small", text: repo.vectors_missing +
        " chunks without vectors of the current embedding model (full-text only for them); re-index to embed them" }));
    }
    return parts;
  }

  function ago(iso) {
    const seconds = Math.max(0, (Date.now() - new Date(iso).getTime()) / 1000);
    if (seconds < 60) return "just now";
    const units = [[86400, "day"], [3600, "h"], [60, "min"]];
    for (const [size, unit] of units) {
      if (seconds >= size) {
        const n = Math.floor(seconds / size);
        return n + " " + (unit === "day" && n > 1 ? "days" : unit) + " ago";
      }
    }
    return "just now";
  }

  /** "indexed 4 min ago at abc1234 — the remote has moved on", and a failing check's error. */
  function freshnessCell(repo) {
    const commit = repo.last_indexed_commit ? repo.last_indexed_commit.slice(0, 7) : "";
    if (!commit) return ["—"];
    const parts = [el("div", { className: "freshness" }, [
      repo.last_indexed_at ? "indexed " + ago(repo.last_indexed_at) + " at " : "at ",
      el("code", { title: repo.last_indexed_commit, text: commit }),
    ])];
    if (repo.behind) {
      parts.push(el("div", { className: "warn small behind", title: "remote tip " + repo.remote_tip,
        text: "— the remote has moved on (" + repo.remote_tip.slice(0, 7) + ")" }));
    } else if (repo.behind === false && repo.last_polled_at) {
      parts.push(el("div", { className: "muted small", text: "up to date, checked " + ago(repo.last_polled_at) }));
    }
    if (repo.poll_error) parts.push(el("div", { className: "error small poll-error", text: repo.poll_error }));
    return parts;
  }

  function actions(repo) {
    return el("div", { className: "row-actions" }, [
      el("button", { type: "button", "data-action": "reindex", "data-id": repo.id, text: "Re-index", "aria-label": "Re-index " + repo.name }),
      el("button", { type: "button", className: "danger", "data-action": "delete", "data-id": repo.id, text: "Delete", "aria-label": "Delete " + repo.name }),
    ]);
  }

  function cell(label, children, className) {
    return el("td", { "data-label": label, className: className }, children);
  }

  function renderRow(repo) {
    const vectors = repo.vectors === undefined ? repo.embedded_count : repo.vectors;
    const chunks = repo.chunk_count + (repo.chunk_count ? " (" + vectors + " with vectors)" : "");
    return el("tr", { "data-id": repo.id, "data-status": repo.status }, [
      cell("Repository", [el("div", { className: "repo-name", text: repo.name }), el("div", { className: "muted small url", text: repo.url + (repo.branch ? " @ " + repo.branch : "") })]),
      cell("Status", statusCell(repo)),
      cell("Job", jobCell(repo), "job"),
      cell("Files", [String(repo.file_count)], "num"),
      cell("Chunks", [chunks], "num"),
      cell("Commit", freshnessCell(repo)),
      cell("Size", [formatBytes(repo.size_bytes), el("div", { className: "muted small", text: formatBytes(repo.indexed_bytes) + " indexed" })], "num"),
      canWrite ? cell("", [actions(repo)]) : null,
    ]);
  }

  /** Replaces the cells of changed rows only, so focus on a button survives a refresh. */
  function render(repositories) {
    const existing = new Map(Array.from(rows.children).map(function (tr) { return [tr.dataset.id, tr]; }));
    repositories.forEach(function (repo, index) {
      const fresh = renderRow(repo);
      const current = existing.get(repo.id);
      existing.delete(repo.id);
      if (current) {
        const oldCells = Array.from(current.children);
        const newCells = Array.from(fresh.children);
        const kept = canWrite ? 1 : 0;  // the actions cell stays, so focus on its buttons does
        for (let i = 0; i < oldCells.length - kept; i++) oldCells[i].replaceWith(newCells[i]);
        current.dataset.status = repo.status;
      }
      const row = current || fresh;
      if (rows.children[index] !== row) rows.insertBefore(row, rows.children[index] || null);
    });
    existing.forEach(function (tr) { tr.remove(); });
    empty.hidden = repositories.length > 0;
  }

  async function refresh() {
    clearTimeout(pollTimer);
    const answer = await api("GET", "/api/repos");
    let delay = SLOW_POLL_MS;
    if (answer.ok) {
      render(answer.data);
      if (answer.data.some(function (repo) { return isActive(repo.current_job); })) delay = FAST_POLL_MS;
      if (statusLine.dataset.kind === "poll-error") { statusLine.textContent = ""; delete statusLine.dataset.kind; }
    } else {
      statusLine.textContent = "Could not refresh the list: " + answer.message;
      statusLine.dataset.kind = "poll-error";
    }
    pollTimer = setTimeout(refresh, delay);
  }

  function confirmAction(title, text, label) {
    return new Promise(function (resolve) {
      document.getElementById("confirm-title").textContent = title;
      document.getElementById("confirm-text").textContent = text;
      document.getElementById("confirm-ok").textContent = label;
      dialog.returnValue = "";
      dialog.addEventListener("close", function () { resolve(dialog.returnValue === "ok"); }, { once: true });
      dialog.showModal();
    });
  }

  if (addForm) addForm.addEventListener("submit", async function (event) {
    event.preventDefault();
    addError.hidden = true;
    const body = { url: addForm.elements.url.value.trim() };
    const branch = addForm.elements.branch.value.trim();
    if (branch) body.branch = branch;
    const button = addForm.querySelector("button[type=submit]");
    button.disabled = true;
    const answer = await api("POST", "/api/repos", body);
    button.disabled = false;
    if (!answer.ok) {
      addError.textContent = "Not added: " + answer.message;
      addError.hidden = false;
      addForm.elements.url.focus();
      return;
    }
    addForm.reset();
    statusLine.textContent = "Added " + answer.data.name + "; indexing has started.";
    refresh();
  });

  rows.addEventListener("click", async function (event) {
    const button = event.target.closest("button[data-action]");
    if (!button) return;
    const row = button.closest("tr");
    const name = row.querySelector(".repo-name").textContent;
    const id = button.dataset.id;
    if (button.dataset.action === "reindex") {
      // Harmless: searches keep using the current index until the new one is complete.
      button.disabled = true;
      const answer = await api("POST", "/api/repos/" + id + "/reindex");
      button.disabled = false;
      statusLine.textContent = answer.ok
        ? (answer.data.coalesced ? name + " is already being indexed; the running job picks up the change."
          : "Re-indexing " + name + ": only what changed is read again, and searches use the current index until then.")
        : "Not re-indexed: " + answer.message;
    } else {
      if (!(await confirmAction("Delete " + name + "?", "Its clone, files, chunks and vectors are removed; running jobs are cancelled. This cannot be undone.", "Delete"))) return;
      const answer = await api("DELETE", "/api/repos/" + id);
      statusLine.textContent = answer.ok ? "Deleted " + name + "." : "Not deleted: " + answer.message;
    }
    refresh();
  });

  refresh();
})();
