/* Helpers shared by the pages: calling the JSON API and reading its errors in plain words. */
"use strict";

window.reposearch = (function () {
  /** Calls the API; resolves to {ok, status, data}. Network failures become a readable error. */
  async function api(method, url, body) {
    const options = { method: method, headers: { Accept: "application/json" } };
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
    let data = null;
    if (response.status !== 204) {
      try { data = await response.json(); } catch (error) { data = null; }
    }
    return { ok: response.ok, status: response.status, data: data, message: errorMessage(response, data) };
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

  return { api: api, el: el, formatBytes: formatBytes, formatDuration: formatDuration };
})();
