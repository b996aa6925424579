/* Tokens page: lists one's API tokens, creates one (its secret shown once), revokes. */
"use strict";

(function () {
  const { api, el } = window.reposearch;
  const form = document.getElementById("token-form");
  const errorLine = document.getElementById("token-error");
  const rows = document.getElementById("token-rows");
  const empty = document.getElementById("token-empty");
  const statusLine = document.getElementById("token-status");
  const fresh = document.getElementById("new-token");
  const secretField = document.getElementById("new-token-value");
  const copyStatus = document.getElementById("copy-status");
  const dialog = document.getElementById("confirm");

  /** "2026-12-01 12:30 UTC" from an ISO time; "—" for none. */
  function when(iso, none) {
    if (!iso) return none || "—";
    const date = new Date(iso);
    if (isNaN(date.getTime())) return iso;
    return date.toISOString().slice(0, 16).replace("T", " ") + " UTC";
  }

  function state(token) {
    if (token.revoked_at || token.revoked === true) return ["revoked", "revoked " + when(token.revoked_at, "")];
    if (token.expires_at && new Date(token.expires_at).getTime() <= Date.now()) return ["expired", "expired"];
    return ["active", "active"];
  }

  function renderRow(token) {
    const [kind, label] = state(token);
    const actions = kind === "active"
      ? el("button", { type: "button", className: "danger", "data-action": "revoke", "data-id": String(token.id),
        "aria-label": "Revoke " + token.name, text: "Revoke" })
      : null;
    return el("tr", { "data-id": String(token.id), "data-state": kind }, [
      el("td", { "data-label": "Name", className: "token-name", text: token.name }),
      el("td", { "data-label": "Scope" }, [el("span", { className: "badge role role-" + token.scope, text: token.scope })]),
      el("td", { "data-label": "Token" }, [el("code", { text: token.prefix + "…" })]),
      el("td", { "data-label": "Created", text: when(token.created_at) }),
      el("td", { "data-label": "Expires", text: when(token.expires_at, "never") }),
      el("td", { "data-label": "Last used", text: when(token.last_used_at, "never") }),
      el("td", { "data-label": "Status", className: "token-state " + kind, text: label }),
      el("td", { "data-label": "" }, [actions]),
    ]);
  }

  async function refresh() {
    const answer = await api("GET", "/api/tokens");
    if (!answer.ok) {
      statusLine.textContent = "Could not list your tokens: " + answer.message;
      return;
    }
    const tokens = (answer.data && answer.data.results) || [];
    rows.replaceChildren.apply(rows, tokens.map(renderRow));
    empty.hidden = tokens.length > 0;
  }

  function showSecret(token) {
    document.getElementById("new-token-name").textContent = "“" + token.name + "” (" + token.scope + ")";
    secretField.value = token.token;
    copyStatus.textContent = "";
    fresh.hidden = false;
    secretField.focus();
    secretField.select();
  }

  function forgetSecret() {
    secretField.value = "";
    fresh.hidden = true;
  }

  async function copySecret() {
    const secret = secretField.value;
    if (!secret) return;
    try {
      await navigator.clipboard.writeText(secret);
    } catch (error) {
      // No clipboard API (plain http is not a secure context): copy the selection instead.
      secretField.focus();
      secretField.select();
      if (!document.execCommand("copy")) {
        copyStatus.textContent = "Copying was refused by the browser: select the token and copy it yourself.";
        return;
      }
    }
    copyStatus.textContent = "Copied to the clipboard.";
  }

  form.addEventListener("submit", async function (event) {
    event.preventDefault();
    errorLine.hidden = true;
    const body = { name: form.elements.name.value.trim(), scope: form.elements.scope.value };
    const days = form.elements.expires_in_days.value.trim();
    if (days) body.expires_in_days = Number(days);
    const button = form.querySelector("button[type=submit]");
    button.disabled = true;
    const answer = await api("POST", "/api/tokens", body);
    button.disabled = false;
    if (!answer.ok) {
      errorLine.textContent = "Not created: " + answer.message;
      errorLine.hidden = false;
      form.elements.name.focus();
      return;
    }
    form.reset();
    showSecret(answer.data);
    statusLine.textContent = "Created " + answer.data.name + ".";
    refresh();
  });

  document.getElementById("copy-token").addEventListener("click", copySecret);
  document.getElementById("dismiss-token").addEventListener("click", forgetSecret);

  function confirmRevoke(name) {
    return new Promise(function (resolve) {
      document.getElementById("confirm-title").textContent = "Revoke " + name + "?";
      document.getElementById("confirm-text").textContent =
        "Anything that sends this token is refused from now on. This cannot be undone.";
      dialog.returnValue = "";
      dialog.addEventListener("close", function () { resolve(dialog.returnValue === "ok"); }, { once: true });
      dialog.showModal();
    });
  }

  rows.addEventListener("click", async function (event) {
    const button = event.target.closest("button[data-action=revoke]");
    if (!button) return;
    const name = button.closest("tr").querySelector(".token-name").textContent;
    if (!(await confirmRevoke(name))) return;
    button.disabled = true;
    const answer = await api("DELETE", "/api/tokens/" + encodeURIComponent(button.dataset.id));
    statusLine.textContent = answer.ok ? "Revoked " + name + "." : "Not revoked: " + answer.message;
    if (!answer.ok) button.disabled = false;
    refresh();
  });

  refresh();
})();
