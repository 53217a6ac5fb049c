"use strict";
// ButterflyBench report: sortable tables and a lazy transcript viewer.
// Every string from the data goes into the page with textContent, never as HTML.
(function () {
  const PAGE = 50;
  const LINES = 12;

  function el(tag, cls, text) {
    const e = document.createElement(tag);
    if (cls) e.className = cls;
    if (text !== undefined && text !== null) e.textContent = String(text);
    return e;
  }

  // ---- sortable tables: click a header to sort by its column (descending first, then
  // ascending); numbers as numbers (a cell's data-value, else the number its text starts
  // with), text as text; an empty cell or "–" always last
  function sortKey(td, num) {
    const raw = (td.dataset.value !== undefined ? td.dataset.value : td.textContent).trim();
    if (raw === "" || raw === "–" || raw === "-") return null;
    if (!num) return raw;
    const v = parseFloat(raw.replace(/^[$+]/, ""));
    return isNaN(v) ? null : v;
  }

  function numeric(rows, col) {
    return rows.every(function (r) {
      const td = r.cells[col];
      return !td || sortKey(td, false) === null || sortKey(td, true) !== null;
    });
  }

  function sortable(table) {
    if (!table.tHead || !table.tBodies.length) return;
    const heads = Array.from(table.tHead.rows[0].cells);
    heads.forEach(function (th, col) {
      th.addEventListener("click", function () {
        const body = table.tBodies[0];
        const rows = Array.from(body.rows);
        const num = th.dataset.type ? th.dataset.type === "num" : numeric(rows, col);
        const dir = th.dataset.dir === "desc" ? 1 : -1;
        heads.forEach(function (h) { delete h.dataset.dir; });
        th.dataset.dir = dir === 1 ? "asc" : "desc";
        const keys = new Map(rows.map(function (r) {
          return [r, r.cells[col] ? sortKey(r.cells[col], num) : null];
        }));
        rows.sort(function (a, b) {
          const x = keys.get(a), y = keys.get(b);
          if (x === null || y === null) return (x === null) - (y === null);
          if (num) return dir * (x - y);
          return dir * x.localeCompare(y, undefined, {numeric: true});
        });
        rows.forEach(function (r) { body.appendChild(r); });
      });
    });
  }
  document.querySelectorAll("table.sortable").forEach(sortable);

  // ---- wide tables: each in its own horizontal scroll, never wider than the window; while
  // columns are hidden to the right a cue says so and the right edge fades (class
  // "overflowing", "at-end" once scrolled to the last column)
  const wraps = [];
  function fit(wrap) {
    const box = wrap.lastChild;
    const hidden = box.scrollWidth > box.clientWidth + 1;
    wrap.classList.toggle("overflowing", hidden);
    wrap.classList.toggle("at-end", !hidden ||
      box.scrollLeft + box.clientWidth >= box.scrollWidth - 1);
  }
  function fitAll() { wraps.forEach(fit); }
  document.querySelectorAll("table").forEach(function (t) {
    const wrap = el("div", "twrap"), box = el("div", "tscroll");
    t.parentNode.insertBefore(wrap, t);
    wrap.appendChild(el("div", "tcue", "scroll sideways for more columns →"));
    wrap.appendChild(box);
    box.appendChild(t);
    box.addEventListener("scroll", function () { fit(wrap); });
    wraps.push(wrap);
  });
  window.addEventListener("resize", fitAll);
  document.querySelectorAll("details").forEach(function (d) {
    d.addEventListener("toggle", fitAll);
  });
  fitAll();

  // ---- transcripts
  const status = document.getElementById("t-status");
  let data = null;
  let shown = [];
  let page = 0;

  async function load() {
    const b64 = document.getElementById("report-data").textContent.trim();
    const bin = atob(b64);
    const bytes = new Uint8Array(bin.length);
    for (let i = 0; i < bin.length; i++) bytes[i] = bin.charCodeAt(i);
    const stream = new Blob([bytes]).stream().pipeThrough(new DecompressionStream("gzip"));
    return JSON.parse(await new Response(stream).text());
  }

  function matches(c, q) {
    if (!q) return true;
    if (c.id.toLowerCase().includes(q)) return true;
    const s = data.scenarios[c.id];
    for (let i = 0; i < c.t.length; i++) {
      if (s.turns[i][1].toLowerCase().includes(q)) return true;
      const raw = c.t[i][1];
      if (raw && raw.toLowerCase().includes(q)) return true;
    }
    return false;
  }

  function filter() {
    const q = document.getElementById("f-search").value.trim().toLowerCase();
    const run = document.getElementById("f-run").value;
    const cat = document.getElementById("f-cat").value;
    const fd = document.getElementById("f-fd").value;
    const failed = document.getElementById("f-failed").checked;
    shown = data.conversations.filter(function (c) {
      if (run !== "" && String(c.r) !== run) return false;
      if (cat && data.scenarios[c.id].category !== cat) return false;
      if (fd && String(c.fd === null ? "none" : c.fd) !== fd) return false;
      if (failed && c.v === "P") return false;
      return matches(c, q);
    });
    page = 0;
    list();
  }

  function list() {
    const body = document.querySelector("#t-list tbody");
    body.replaceChildren();
    const pages = Math.max(1, Math.ceil(shown.length / PAGE));
    page = Math.min(page, pages - 1);
    shown.slice(page * PAGE, (page + 1) * PAGE).forEach(function (c) {
      const tr = el("tr", "pick");
      [data.runs[c.r], c.id, data.scenarios[c.id].category, c.l, c.k].forEach(function (x) {
        const td = el("td", null, x);
        td.title = String(x);  // cut with an ellipsis when the column is narrow: whole here
        tr.appendChild(td);
      });
      tr.appendChild(el("td", "v " + (c.v === "-" ? "X" : c.v), c.v));
      tr.appendChild(el("td", null, c.fd === null ? "none" : c.fd));
      tr.addEventListener("click", function () { view(c); });
      body.appendChild(tr);
    });
    fitAll();
    document.getElementById("t-page").textContent =
      "page " + (page + 1) + " of " + pages + " (" + shown.length + " conversations)";
    status.textContent = shown.length + " of " + data.conversations.length + " conversations";
  }

  function rawBlock(raw) {
    const wrap = el("div", "raw");
    const lines = (raw || "").split("\n");
    const pre = el("pre", null, lines.length > LINES ? lines.slice(0, LINES).join("\n") : raw);
    wrap.appendChild(pre);
    if (lines.length > LINES) {
      const more = el("button", "more", "show all " + lines.length + " lines");
      more.type = "button";
      more.addEventListener("click", function () {
        const full = pre.dataset.full === "1";
        pre.textContent = full ? lines.slice(0, LINES).join("\n") : raw;
        pre.dataset.full = full ? "0" : "1";
        more.textContent = full ? "show all " + lines.length + " lines" : "show less";
      });
      wrap.appendChild(more);
    }
    return wrap;
  }

  // ---- the code track: a turn's program diff, one line a span coloured by its sign
  function diffLines(pre, lines) {
    pre.replaceChildren();
    lines.forEach(function (line, j) {
      const head = j < 2 && (line.startsWith("--- ") || line.startsWith("+++ "));
      pre.appendChild(el("span", head ? "hdr" : line.startsWith("+") ? "add" :
        line.startsWith("-") ? "del" : line.startsWith("@@") ? "hunk" : "ctx", line));
    });
  }

  function programSide(diff) {
    const side = el("div", "pside");
    side.appendChild(el("b", null, "program diff:"));
    if (diff === null || diff === "") {
      side.appendChild(el("div", "note", diff === null ? "no program (the turn abstained)" :
        "program: unchanged"));
      return side;
    }
    const lines = diff.split("\n"), most = 2 * LINES;
    const pre = el("pre", "pdiff");
    diffLines(pre, lines.length > most ? lines.slice(0, most) : lines);
    side.appendChild(pre);
    if (lines.length > most) {
      const more = el("button", "more", "show all " + lines.length + " lines");
      more.type = "button";
      more.addEventListener("click", function () {
        const full = pre.dataset.full === "1";
        diffLines(pre, full ? lines.slice(0, most) : lines);
        pre.dataset.full = full ? "0" : "1";
        more.textContent = full ? "show all " + lines.length + " lines" : "show less";
      });
      side.appendChild(more);
    }
    return side;
  }

  function view(c) {
    const box = document.getElementById("t-view");
    box.replaceChildren();
    const s = data.scenarios[c.id];
    const verdict = {P: "final match", F: "final answer wrong", A: "abstained at the final turn",
                     "-": "incomplete"}[c.v];
    box.appendChild(el("h3", null, c.id + " (" + s.category + ")"));
    box.appendChild(el("p", "note", data.runs[c.r] + ", layout " + c.l + ", repeat " + c.k +
      ": " + verdict + "; first divergent turn " + (c.fd === null ? "none" : c.fd)));
    const oracle = Object.assign({}, s.initial);
    c.t.forEach(function (t, i) {
      const [op, text, changes] = s.turns[i];
      Object.assign(oracle, changes);
      const turn = el("div", "turn " + ({m: "ok", w: "bad", a: "abst", x: "miss", n: "skip"}[t[0]] || ""));
      if (c.fd === i + 1) turn.classList.add("first");
      const head = el("div", "thead", "turn " + (i + 1) + " (" + op + "): " +
        ({m: "match", w: "WRONG", a: "ABSTAINED", x: "no answer",
          n: "not asked (no answer, not scored)"}[t[0]]) +
        (c.fd === i + 1 ? "  ← first divergent turn" : ""));
      turn.appendChild(head);
      const u = el("div", "user");
      u.appendChild(el("b", null, "user: "));
      u.appendChild(el("span", null, text));
      turn.appendChild(u);
      if (t[0] !== "x" && t[0] !== "n") {
        if (t.length > 9) {
          const r = el("details", "reasoning");
          r.appendChild(el("summary", null, "reasoning" + (t[10] !== null ? " (" + t[10] +
            " tokens)" : "") + (t[11] > t[9].length ? ", its first " + t[9].length + " of " +
            t[11] + " characters (butterfly show --full for all)" : "")));
          r.appendChild(rawBlock(t[9]));
          turn.appendChild(r);
        }
        const code = c.c ? c.c[i] : null;  // the code track: [program diff, broken settings]
        if (code) {
          const a = el("details", "answer");
          const n = (t[1] || "").split("\n").length;
          a.appendChild(el("summary", null, "the model's whole answer (" + (!t[1] ? "empty" :
            n + (n === 1 ? " line" : " lines")) + ")"));
          a.appendChild(rawBlock(t[1]));
          turn.appendChild(a);
        } else {
          turn.appendChild(el("b", null, "model:"));
          turn.appendChild(rawBlock(t[1]));
        }
        if (t[7] && t[7].length) {
          const d = el("details");
          d.appendChild(el("summary", null, t[7].length + " samples voted (the spec is the vote)"));
          t[7].forEach(function (r, k) {
            d.appendChild(el("div", "note", "sample " + k));
            d.appendChild(rawBlock(r));
          });
          turn.appendChild(d);
        }
        const spec = code ? el("div", "sside") : turn;
        if (code) {
          const pair = el("div", "codepair");
          pair.appendChild(programSide(code[0]));
          spec.appendChild(el("b", null, "observed spec:"));
          pair.appendChild(spec);
          turn.appendChild(pair);
        }
        if (t[0] === "a") {
          spec.appendChild(el("div", "abst", "abstention: " + t[5] + (t[6] ? " (" + t[6] + ")" : "")));
        } else if (t[0] === "m") {
          spec.appendChild(el("div", "okline", "spec matches the oracle"));
        }
        const keys = Object.keys(t[2]);
        if (keys.length || Object.keys(t[8]).length) {
          const tab = el("table", "diff");
          const hr = el("tr");
          ["setting", "model", "oracle", ""].forEach(function (h) { hr.appendChild(el("th", null, h)); });
          tab.appendChild(hr);
          keys.forEach(function (k) {
            // the marks of butterfly show, in its order: collateral, edit not made, broken, wrong
            const coll = t[3].includes(k), missed = t[4].includes(k);
            const broken = !coll && !missed && code !== null && code[1].includes(k);
            const tr = el("tr", coll ? "coll" : (missed ? "missed" : (broken ? "broken" : "wrong")));
            tr.appendChild(el("td", null, k));
            tr.appendChild(el("td", null, t[2][k]));
            tr.appendChild(el("td", null, oracle[k]));
            tr.appendChild(el("td", null, coll ? "collateral: changed, not asked" :
              (missed ? "edit not made" : (broken ? "broken: the program showed no value of it" :
                "wrong"))));
            tab.appendChild(tr);
          });
          Object.keys(t[8]).forEach(function (k) {
            const tr = el("tr", "coll");
            tr.appendChild(el("td", null, k));
            tr.appendChild(el("td", null, t[8][k]));
            tr.appendChild(el("td", null, oracle[k]));
            tr.appendChild(el("td", null, "changed, not asked (now equal to the oracle)"));
            tab.appendChild(tr);
          });
          spec.appendChild(tab);
        }
      }
      box.appendChild(turn);
    });
    box.scrollIntoView({block: "nearest"});
  }

  ["f-search", "f-run", "f-cat", "f-fd", "f-failed"].forEach(function (id) {
    document.getElementById(id).addEventListener(id === "f-search" ? "input" : "change",
      function () { if (data) filter(); });
  });
  document.getElementById("t-prev").addEventListener("click", function () {
    if (page > 0) { page--; list(); }
  });
  document.getElementById("t-next").addEventListener("click", function () {
    if ((page + 1) * PAGE < shown.length) { page++; list(); }
  });

  function openHash() {
    // #t/RUN/SCENARIO/LAYOUT/REPEAT (the compare view's links): show that transcript
    const m = /^#t\/(\d+)\/(.+)\/([^/]+)\/(\d+)$/.exec(decodeURIComponent(location.hash));
    if (!m || !data) return;
    const c = data.conversations.find(function (x) {
      return x.r === Number(m[1]) && x.id === m[2] && x.l === m[3] && x.k === Number(m[4]);
    });
    if (c) view(c);
  }
  window.addEventListener("hashchange", openHash);

  load().then(function (d) {
    data = d;
    filter();
    openHash();
    document.body.dataset.ready = "1";
  }).catch(function (e) {
    status.textContent = "Could not read the transcripts: " + e;
    document.body.dataset.ready = "error";
  });
})();
