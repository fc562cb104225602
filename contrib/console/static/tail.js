// Live tail of a stream's messages page (?follow=1): polls the console's
// JSON API for rows after the newest one shown and appends them. Every value
// goes in with textContent, never as HTML. The page keeps the newest
// maxRows rows.
(function () {
  "use strict";
  const tail = document.getElementById("tail");
  const body = document.querySelector("#messages tbody");
  if (!tail || !body) {
    return;
  }
  const state = document.getElementById("tail-state");
  const maxRows = 500;
  const previewChars = 2000;
  let after = Number(tail.dataset.after) || 0;

  function cell(row, text, cls) {
    const td = document.createElement("td");
    if (cls) {
      td.className = cls;
    }
    td.textContent = text;
    row.appendChild(td);
    return td;
  }

  function when(iso) {
    return iso ? iso.replace("T", " ").replace(/\.\d+Z$/, "Z") : "—";
  }

  function add(r) {
    const empty = body.querySelector("td[colspan]");
    if (empty) {
      empty.parentNode.remove();
    }
    const row = document.createElement("tr");
    row.dataset.id = String(r.id);
    const link = document.createElement("a");
    link.href = tail.dataset.link + "?id=" + r.id;
    link.textContent = String(r.id);
    cell(row, "", "num").appendChild(link);
    cell(row, String(r.partition), "num");
    cell(row, "v" + r.schema_version);
    cell(row, r.key === null ? "—" : r.key);
    cell(row, r.routing_key);
    cell(row, when(r.produced_at));
    const headers = cell(row, "");
    for (const [k, v] of Object.entries(r.headers)) {
      const code = document.createElement("code");
      code.textContent = k + "=" + v;
      headers.append(code, " ");
    }
    const pre = document.createElement("pre");
    pre.className = "payload";
    let text = JSON.stringify(r.payload, null, 2);
    if (text.length > previewChars) {
      text = text.slice(0, previewChars) + "\n… (open the message for all of it)";
    }
    pre.textContent = text;
    cell(row, "").appendChild(pre);
    body.appendChild(row);
    while (body.rows.length > maxRows) {
      body.deleteRow(0);
    }
  }

  async function poll() {
    let wait = 1000;
    try {
      const u = new URL(tail.dataset.api, location.href);
      u.search = tail.dataset.query;
      u.searchParams.set("after", String(after));
      const res = await fetch(u, { headers: { Accept: "application/json" }, credentials: "same-origin" });
      const page = await res.json();
      if (!res.ok) {
        throw new Error(page.error || "HTTP " + res.status);
      }
      for (const r of page.records) {
        add(r);
        after = Math.max(after, r.id);
      }
      // More rows than one page are waiting: read on at once.
      wait = page.done ? 1000 : 0;
      state.textContent = "following: " + body.querySelectorAll("tr[data-id]").length + " message(s) shown, newest id " + after;
    } catch (e) {
      wait = 5000;
      state.textContent = "not following for now (" + e.message + "); trying again in 5 s";
    }
    setTimeout(poll, wait);
  }

  poll();
})();
