/* TOOLCALL-300 team dashboard: sign in with a team licence key, see the team's runs and
   baselines as charts, open a run and its comparison with its baseline.

   What it is: one plain script, no framework, no network beyond this API. The licence key
   lives in sessionStorage only and travels as an Authorization: Bearer header, never in a
   URL or localStorage. Every piece of API data reaches the DOM through textContent or
   setAttribute (never innerHTML), and the page is served under a hash-pinned CSP.
   What it is not: a second source of truth. Verdicts, deltas and comparisons are shown as
   the API computed them (runs contract); the page only arranges them. */
(function () {
  "use strict";

  var KEY_SLOT = "toolcall300.licenceKey";
  var SVG_NS = "http://www.w3.org/2000/svg";
  var POLL_MS = 4000;
  var LONG_LIST = 30;

  // The server's facts (categories in the README's order, each failure reason in words, each
  // track's categories and which way each of its gated figures is better), put in the page as
  // one JSON block when it was built.
  var FACTS = JSON.parse(document.getElementById("server-facts").textContent);
  var CATEGORIES = FACTS.categories;
  var FAILURE_TEXT = FACTS.failure_text;

  /* What each track's charts, tables and latest-run line show (docs/tracks.md): a figure is a
     count of the run's summary (`key`), out of another (`of`), or a share in per cent, either
     of two counts (`ratio`: matched calls of those returned) or of a stored fraction
     (`fraction`: the commit lead). `chart: false` figures are in the tables, not drawn. Which
     way a figure is better comes from the server (its track's gate); a share derived here is
     better up. A track's runs are only ever drawn with its own figures. */
  var TRACKS = {
    single: {
      name: "Single call",
      unit: "cases",
      legend: "the single-call track (one text, one expected call or refusal): exact matches out of the cases and correct refusals out of the refusal cases; invented calls, false refusals and schema-invalid returns as counts, fewer is better.",
      categories: "Cases passed in each of the twelve categories, per scored run.",
      metrics: [
        { key: "exact", label: "Exact matches", of: "cases", column: true },
        { key: "refused_correctly", label: "Refused correctly", of: "refusal_cases" },
        { key: "invented_calls", label: "Invented calls", column: true },
        { key: "false_refusals", label: "False refusals" },
        { key: "schema_invalid_returns", label: "Schema-invalid returns", column: true }
      ]
    },
    parallel: {
      name: "Parallel",
      unit: "turns",
      legend: "the parallel track (one turn of several calls): exact turns out of the turns; call precision (matched calls of those returned) and call recall (of those expected) in per cent; invented calls, dropped calls and false collapses as counts, fewer is better; partial refusals exact out of the turns that hold one.",
      categories: "Turns passed in each category of the parallel track, per scored run.",
      metrics: [
        { key: "exact_turns", label: "Exact turns", of: "cases", column: true },
        { key: "call_precision", label: "Call precision", ratio: ["matched_calls", "returned_calls"] },
        { key: "call_recall", label: "Call recall", ratio: ["matched_calls", "expected_calls"] },
        { key: "invented_calls", label: "Invented calls", column: true },
        { key: "dropped_calls", label: "Dropped calls", column: true },
        { key: "false_collapses", label: "False collapses", column: true },
        { key: "partial_refusals_exact", label: "Partial refusals exact", of: "partial_refusal_turns" },
        { key: "order_free_turns", label: "Order-free turns (BFCL)", of: "cases", chart: false },
        { key: "matched_calls", label: "Matched calls", of: "expected_calls", chart: false },
        { key: "schema_invalid_returns", label: "Schema-invalid returns", chart: false }
      ]
    },
    deltas: {
      name: "Deltas",
      unit: "cases",
      legend: "the deltas track (one call streamed in pieces): exact cases (right under every partition of the stream, identical across them, no unsafe commit) and cases invariant across partitions, out of the cases; unsafe commits (the goal is 0) and invented values as counts, fewer is better; correct refusals out of the refusal cases; the commit lead, how much of the stream was still to come when a value was committed, in per cent, more is earlier.",
      categories: "Cases passed under every partition in each category of the deltas track, per scored run.",
      metrics: [
        { key: "exact", label: "Exact", of: "cases", column: true },
        { key: "invariant", label: "Invariant across partitions", of: "cases", column: true },
        { key: "unsafe_commits", label: "Unsafe commits", column: true },
        { key: "invented_values", label: "Invented values" },
        { key: "refused_correctly", label: "Refused correctly", of: "refusal_cases" },
        { key: "commit_lead", label: "Commit lead", fraction: true, column: true },
        { key: "streams_exact", label: "Streams exact", of: "streams", chart: false },
        { key: "invented_calls", label: "Invented calls", chart: false },
        { key: "false_refusals", label: "False refusals", chart: false },
        { key: "commits", label: "Commits", chart: false }
      ]
    }
  };
  var TRACK_ORDER = ["single", "parallel", "deltas"];
  TRACK_ORDER.forEach(function (name) {
    var better = ((FACTS.tracks || {})[name] || {}).better_when || {};
    TRACKS[name].metrics.forEach(function (m) {
      m.better = better[m.key] || (m.ratio ? "up" : undefined);
    });
  });
  // The single-call track's five counts (the comparison's rows since before tracks).
  var METRICS = TRACKS.single.metrics;
  var NEUTRAL_COUNTS = { cases: "Cases", refusal_cases: "Refusal cases" };

  /* ------------------------------------------------------------------ pure helpers */

  /** Resolve an API path against the page's own directory, so the page works under an API
      Gateway stage prefix (/prod/dashboard -> /prod/runs/...) and on the local stack. */
  function apiUrl(path, pageHref) {
    var base = new URL(".", pageHref);
    return new URL(String(path).replace(/^\/+/, ""), base).toString();
  }

  function label(name) {
    var text = String(name).replace(/_/g, " ");
    return text.charAt(0).toUpperCase() + text.slice(1);
  }

  function shortCommit(commit) {
    return typeof commit === "string" ? commit.slice(0, 8) : "";
  }

  /** "2026-11-30 14:05 UTC" from an ISO 8601 time; "" for null. Fixed UTC, so screenshots
      and tests do not depend on the browser's zone. */
  function formatTime(iso) {
    if (!iso) { return ""; }
    var d = new Date(iso);
    if (isNaN(d.getTime())) { return String(iso); }
    return d.toISOString().slice(0, 16).replace("T", " ") + " UTC";
  }

  function runBaseline(run) {
    return typeof run.baseline === "string" && run.baseline ? run.baseline : "main";
  }

  /** The branch a run was made from: its ref without refs/heads/ (another ref as it is). */
  function branchOf(run) {
    var ref = typeof run.ref === "string" ? run.ref : "";
    return ref.indexOf("refs/heads/") === 0 ? ref.slice(11) : ref;
  }

  /** Branches to choose between: main first, then the rest sorted. */
  function branchNames(runs) {
    var seen = {};
    (runs || []).forEach(function (run) { if (branchOf(run)) { seen[branchOf(run)] = true; } });
    var names = Object.keys(seen).sort();
    var main = names.indexOf("main");
    if (main > 0) { names.splice(main, 1); names.unshift("main"); }
    return names;
  }

  /** Two stored reports case by case: the ids whose result differs, and how. `broken`:
      passed in A, fails in B; `fixed`: failed in A, passes in B; `changed`: fails in both with
      another outcome; `missing`: in one report only. Each entry {id, category, a, b}. */
  function compareCases(reportA, reportB) {
    function rows(report) {
      var out = {};
      (((report || {}).score || {}).per_case || []).forEach(function (row) { out[row.id] = row; });
      return out;
    }
    var a = rows(reportA), b = rows(reportB);
    var result = { broken: [], fixed: [], changed: [], missing: [] };
    var ids = Object.keys(a).concat(Object.keys(b).filter(function (id) { return !(id in a); }));
    ids.forEach(function (id) {
      var x = a[id], y = b[id];
      var entry = { id: id, category: (x || y).category, a: x ? x.outcome : "absent", b: y ? y.outcome : "absent" };
      if (!x || !y) { result.missing.push(entry); }
      else if (x.passed && !y.passed) { result.broken.push(entry); }
      else if (!x.passed && y.passed) { result.fixed.push(entry); }
      else if (!x.passed && !y.passed && x.outcome !== y.outcome) { result.changed.push(entry); }
    });
    return result;
  }

  /** Baseline names to choose between: main first, then the rest sorted. */
  function baselineNames(baselinesDoc, runs) {
    var seen = {};
    var byName = (baselinesDoc && baselinesDoc.baselines) || {};
    Object.keys(byName).forEach(function (name) { seen[name] = true; });
    (runs || []).forEach(function (run) { seen[runBaseline(run)] = true; });
    var names = Object.keys(seen).sort();
    var main = names.indexOf("main");
    if (main > 0) { names.splice(main, 1); names.unshift("main"); }
    return names;
  }

  /** A run's track: a run recorded before tracks existed is the single-call track's. */
  function trackOf(run) { return (run && run.track) || "single"; }

  /** "exact / of" for a run of any track: the single-call and deltas tracks count `exact` of
      `cases`, the parallel track `exact_turns` of `cases` (its turns); a run of another track
      than the single-call one says which, so its figure is never read as a single-call score. */
  function exactText(run, s) {
    if (!s) { return ""; }
    var text = exactFigure(s);
    return trackOf(run) === "single" ? text : text + " (" + trackOf(run) + ")";
  }

  /** "exact / of" alone, where a column's heading already names the track. */
  function exactFigure(s) {
    if (!s) { return ""; }
    return (s.exact !== undefined ? s.exact : s.exact_turns) + " / " + s.cases;
  }

  /** The track a filter names: one of the tracks, else the single-call track's. */
  function knownTrack(name) {
    return TRACK_ORDER.indexOf(name) >= 0 ? name : "single";
  }

  /** Scored runs of `track` (the single-call track's when omitted) measured against
      `baseline` (all runs when it is ""), oldest first: a chart draws one track's figures,
      so it never holds a run of another track. The API lists newest first and breaks
      created_at ties (whole seconds) by its own order, so the list is reversed before a
      stable sort: runs created in the same second keep that order. */
  function scoredHistory(runs, baseline, track) {
    var wanted = track || "single";
    return (runs || []).filter(function (run) {
      return run.status === "scored" && run.summary && trackOf(run) === wanted &&
        (!baseline || runBaseline(run) === baseline);
    }).reverse().sort(function (a, b) {
      return String(a.created_at).localeCompare(String(b.created_at));
    });
  }

  function isCount(v) { return typeof v === "number" && isFinite(v); }

  /** One figure of a summary: {value, of} for a count (out of `of` when it has one),
      {value, of: 100, percent: true} for a share, or null when the summary lacks it (a share
      of nothing, or a figure the run's summary did not record). */
  function figure(metric, s) {
    if (!s) { return null; }
    if (metric.ratio) {
      var num = s[metric.ratio[0]], den = s[metric.ratio[1]];
      if (!isCount(num) || !isCount(den) || den === 0) { return null; }
      return { value: Math.round(1000 * num / den) / 10, of: 100, percent: true };
    }
    var v = s[metric.key];
    if (!isCount(v)) { return null; }
    if (metric.fraction) { return { value: Math.round(1000 * v) / 10, of: 100, percent: true }; }
    return { value: v, of: metric.of && isCount(s[metric.of]) ? s[metric.of] : null, percent: false };
  }

  /** A figure in words: "97.5%", "262 of 300", "3"; "n/a" for none. */
  function figureText(f) {
    if (!f) { return "n/a"; }
    if (f.percent) { return f.value.toFixed(1) + "%"; }
    return f.of !== null && f.of !== undefined ? f.value + " of " + f.of : String(f.value);
  }

  /** The figures a track draws (`chart` not false) or lists (all). */
  function trackMetrics(track, charted) {
    return TRACKS[knownTrack(track)].metrics.filter(function (m) { return !charted || m.chart !== false; });
  }

  /** One chart series: a point per scored run whose summary holds the figure, plus what
      each point should say. */
  function metricSeries(history, metric, baselineIds) {
    var out = [];
    history.forEach(function (run) {
      var f = figure(metric, run.summary);
      if (!f) { return; }
      out.push({
        run_id: run.run_id,
        when: run.created_at,
        value: f.value,
        of: f.of,
        percent: f.percent,
        mark: pointMark(run, baselineIds)
      });
    });
    return out;
  }

  function categorySeries(history, category, baselineIds) {
    return history.map(function (run) {
      var cats = run.summary.categories || {};
      var c = cats[category] || { n: 0, pass: 0 };
      return {
        run_id: run.run_id,
        when: run.created_at,
        value: Number(c.pass) || 0,
        of: Number(c.n) || 0,
        mark: pointMark(run, baselineIds)
      };
    });
  }

  function pointMark(run, baselineIds) {
    if (run.verdict === "baseline_set" || baselineIds[run.run_id]) { return "baseline"; }
    if (run.verdict === "regression") { return "regression"; }
    return "run";
  }

  /** A track's categories in its report order (the server's), then any other, sorted. */
  function orderedCategories(names, track) {
    var known = (((FACTS.tracks || {})[knownTrack(track)] || {}).categories) || CATEGORIES;
    return known.filter(function (c) { return names.indexOf(c) >= 0; })
      .concat(names.filter(function (c) { return known.indexOf(c) < 0; }).sort());
  }

  /** Every category seen in the runs of `track`: the single-call track's twelve always
      (the README's, in its order), another track's as its runs hold them, in its order. */
  function categoriesOf(history, track) {
    var seen = [];
    history.forEach(function (run) {
      Object.keys(run.summary.categories || {}).forEach(function (c) {
        if (seen.indexOf(c) < 0) { seen.push(c); }
      });
    });
    if (knownTrack(track) === "single") {
      return CATEGORIES.concat(seen.filter(function (c) { return CATEGORIES.indexOf(c) < 0; }).sort());
    }
    return orderedCategories(seen, track);
  }

  /** Chart geometry: x by run order (equal steps: CI runs are irregular in time and the
      question is "did this run get worse", not "when"), y from 0 to the largest possible. */
  function chartPoints(series, box) {
    var top = 1;
    series.forEach(function (p) { top = Math.max(top, p.of || 0, p.value); });
    var inset = 8;  // keeps the first and last markers clear of the axis labels
    var innerW = box.width - box.left - box.right - 2 * inset;
    var innerH = box.height - box.top - box.bottom;
    var step = series.length > 1 ? innerW / (series.length - 1) : 0;
    return {
      yMax: top,
      points: series.map(function (p, i) {
        return {
          x: box.left + inset + (series.length > 1 ? i * step : innerW / 2),
          y: box.top + innerH - (p.value / top) * innerH,
          datum: p
        };
      })
    };
  }

  /** How a figure of `track` (the single-call track's when omitted) changed, in the words
      of its better direction; "same" for no change or a figure with no direction. */
  function assess(name, delta, track) {
    var metric = trackMetrics(track || "single", false).filter(function (m) { return m.key === name; })[0];
    if (!metric || !metric.better || !delta) { return "same"; }
    var improved = metric.better === "up" ? delta > 0 : delta < 0;
    return improved ? "better" : "worse";
  }

  /** The comparison's categories split into fell / rose / unchanged (deltas as the API sent),
      in the order of `track`'s categories. */
  function categoryMoves(comparison, track) {
    var out = { fell: [], rose: [], same: [] };
    var cats = (comparison && comparison.categories) || {};
    orderedCategories(Object.keys(cats), track).forEach(function (name) {
      var c = cats[name];
      var entry = { name: name, baseline: c.baseline, current: c.current, delta: c.delta };
      if (c.delta < 0) { out.fell.push(entry); }
      else if (c.delta > 0) { out.rose.push(entry); }
      else { out.same.push(entry); }
    });
    return out;
  }

  function signed(n) {
    return n > 0 ? "+" + n : String(n);
  }

  /** A count as the API sent it; a stored fraction (the commit lead) in per cent. */
  function valueText(metric, v) {
    return metric && metric.fraction && isCount(v) ? (Math.round(1000 * v) / 10).toFixed(1) + "%" : String(v);
  }

  /** The change between two shares in per cent, in percentage points to one decimal. */
  function pointsDelta(b, a) {
    return Math.round(10 * (b - a)) / 10;
  }

  /* ------------------------------------------------------------------ DOM helpers */

  /** Build an element; attributes via setAttribute and text via textContent only. */
  function el(tag, attrs, children) {
    return build(document.createElement(tag), attrs, children);
  }

  function svg(tag, attrs, children) {
    return build(document.createElementNS(SVG_NS, tag), attrs, children);
  }

  function build(node, attrs, children) {
    Object.keys(attrs || {}).forEach(function (name) {
      var value = attrs[name];
      if (value === null || value === undefined || value === false) { return; }
      if (name === "text") { node.textContent = String(value); return; }
      node.setAttribute(name, value === true ? "" : String(value));
    });
    (children || []).forEach(function (child) {
      if (child === null || child === undefined) { return; }
      node.appendChild(typeof child === "string" ? document.createTextNode(child) : child);
    });
    return node;
  }

  /** A table in a keyboard-scrollable region named for screen readers (`label` or
      `labelledBy`), with an optional caption and header row; the one way tables are drawn. */
  function scrollTable(opts) {
    var region = { "class": "table-scroll", role: "region", tabindex: "0" };
    if (opts.labelledBy) { region["aria-labelledby"] = opts.labelledBy; } else { region["aria-label"] = opts.label; }
    var parts = [];
    if (opts.caption) { parts.push(el("caption", { text: opts.caption })); }
    if (opts.head) {
      parts.push(el("thead", {}, [el("tr", {}, opts.head.map(function (h) {
        return el("th", { scope: "col", "class": h.num ? "num" : null, text: h.text });
      }))]));
    }
    parts.push(el("tbody", {}, opts.rows));
    return el("div", region, [el("table", { "class": "data", id: opts.id || null }, parts)]);
  }

  function clear(node) {
    while (node.firstChild) { node.removeChild(node.firstChild); }
    return node;
  }

  function $(id) { return document.getElementById(id); }

  function badge(value, kind) {
    var text = value ? label(value) : "none";
    return el("span", { "class": "badge badge-" + (value || "none"), text: (kind ? kind + ": " : "") + text });
  }

  /* ------------------------------------------------------------------ charts */

  var uid = 0;

  /** A small line chart as inline SVG with a title, a description and a table alternative. */
  var BOX_WIDE = { width: 320, height: 150, left: 34, right: 12, top: 10, bottom: 24 };
  var BOX_SMALL = { width: 240, height: 130, left: 30, right: 10, top: 10, bottom: 24 };

  function lineChart(title, unit, series, small) {
    var box = small ? BOX_SMALL : BOX_WIDE;
    var geo = chartPoints(series, box);
    var id = "chart-" + (++uid);
    var last = series[series.length - 1];
    var first = series[0];
    var describe = title + " over " + series.length + " scored run" + (series.length === 1 ? "" : "s") +
      ": from " + pointText(first, unit) + " on " + formatTime(first.when) +
      " to " + pointText(last, unit) + " on " + formatTime(last.when) + ".";

    var yTicks = [0, Math.round(geo.yMax / 2), geo.yMax].filter(function (v, i, all) {
      return all.indexOf(v) === i;
    });
    var innerBottom = box.height - box.bottom;
    var nodes = [
      svg("title", { id: id + "-t", text: title }),
      svg("desc", { id: id + "-d", text: describe })
    ];
    yTicks.forEach(function (v) {
      var y = box.top + (box.height - box.top - box.bottom) * (1 - v / geo.yMax);
      nodes.push(svg("line", { "class": "chart-grid", x1: box.left, x2: box.width - box.right, y1: y, y2: y }));
      nodes.push(svg("text", { "class": "chart-axis", x: box.left - 4, y: y + 4, "text-anchor": "end", text: String(v) }));
    });
    var ends = axisLabels(first.when, last.when);
    nodes.push(svg("text", { "class": "chart-axis", x: box.left, y: box.height - 6, text: ends[0] }));
    if (series.length > 1) {
      nodes.push(svg("text", { "class": "chart-axis", x: box.width - box.right, y: box.height - 6, "text-anchor": "end", text: ends[1] }));
      nodes.push(svg("polyline", {
        "class": "chart-line",
        points: geo.points.map(function (p) { return p.x.toFixed(1) + "," + p.y.toFixed(1); }).join(" ")
      }));
    }
    geo.points.forEach(function (p) {
      var tip = svg("title", { text: p.datum.run_id + ", " + formatTime(p.datum.when) + ": " + pointText(p.datum, unit) });
      nodes.push(marker(p, innerBottom, tip));
    });

    var chart = svg("svg", {
      viewBox: "0 0 " + box.width + " " + box.height,
      role: "img",
      "aria-labelledby": id + "-t " + id + "-d",
      "data-points": series.length,
      focusable: "false"
    }, nodes);

    return el("figure", { "class": "chart", "data-chart": title }, [
      el("figcaption", {}, [title + " ", el("span", { "class": "latest", text: "latest " + pointText(last, unit) })]),
      chart,
      el("details", {}, [
        el("summary", { text: "Table: " + title }),
        dataTable(title, unit, series)
      ])
    ]);
  }

  function marker(p, innerBottom, tip) {
    var x = p.x.toFixed(1);
    var y = p.y.toFixed(1);
    if (p.datum.mark === "baseline") {
      return svg("rect", { "class": "chart-point-baseline", x: (p.x - 4.5).toFixed(1), y: (p.y - 4.5).toFixed(1), width: 9, height: 9, "data-mark": "baseline" }, [tip]);
    }
    if (p.datum.mark === "regression") {
      var d = "M" + (p.x - 4) + " " + (p.y - 4) + "L" + (p.x + 4) + " " + (p.y + 4) +
        "M" + (p.x + 4) + " " + (p.y - 4) + "L" + (p.x - 4) + " " + (p.y + 4);
      return svg("path", { "class": "chart-point-regression", d: d, "data-mark": "regression" }, [tip]);
    }
    return svg("circle", { "class": "chart-point", cx: x, cy: y, r: 4, "data-mark": "run" }, [tip]);
  }

  /** The x axis's two end labels: dates, or times of day when both ends share a date. */
  function axisLabels(firstIso, lastIso) {
    var a = formatTime(firstIso);
    var b = formatTime(lastIso);
    if (a.slice(0, 10) === b.slice(0, 10)) { return [a.slice(11, 16), b.slice(11, 16)]; }
    return [a.slice(0, 10), b.slice(0, 10)];
  }

  function pointText(p, unit) {
    if (p.percent) { return figureText(p); }
    return p.of !== null && p.of !== undefined ? p.value + " of " + p.of : p.value + (unit ? " " + unit : "");
  }

  function dataTable(title, unit, series) {
    var rows = series.map(function (p) {
      return el("tr", {}, [
        el("th", { scope: "row" }, [el("a", { href: "#/runs/" + encodeURIComponent(p.run_id), text: p.run_id })]),
        el("td", { text: formatTime(p.when) }),
        el("td", { "class": "num", text: pointText(p, unit) }),
        el("td", { text: p.mark === "run" ? "" : label(p.mark === "baseline" ? "baseline set" : p.mark) })
      ]);
    });
    return scrollTable({
      label: title + " as a table", caption: title + " per scored run", rows: rows,
      head: [{ text: "Run" }, { text: "Created" }, { text: "Value", num: true }, { text: "Note" }]
    });
  }

  /* ------------------------------------------------------------------ API */

  function ApiError(status, code, message) {
    this.status = status;
    this.code = code;
    this.message = message;
  }

  /** Call an API path with the bearer key (GET unless `method` says otherwise; `body` is sent
      as JSON); resolves to the parsed JSON or rejects with ApiError. */
  function api(path, key, asBlob, method, body) {
    var init = { method: method || "GET", headers: { Authorization: "Bearer " + key, Accept: "application/json" }, cache: "no-store", credentials: "omit", referrerPolicy: "no-referrer" };
    if (body !== undefined) {
      init.headers["Content-Type"] = "application/json";
      init.body = JSON.stringify(body);
    }
    return fetch(apiUrl(path, window.location.href), init).then(function (response) {
      if (response.ok) {
        return asBlob ? response.blob() : response.json().catch(function () {
          throw new ApiError(response.status, "bad_response", "The service sent an answer this page cannot read.");
        });
      }
      return response.json().catch(function () { return null; }).then(function (body) {
        var err = body && body.error ? body.error : {};
        throw new ApiError(response.status, err.code || "http_" + response.status,
          err.message || "The service answered " + response.status + ".");
      });
    }, function () {
      throw new ApiError(0, "network", "The service could not be reached. Check your connection and try again.");
    });
  }

  /* ------------------------------------------------------------------ state */

  var state = { key: null, team: null, teamName: null, managesMembers: false, members: null, badge: null, badgeSaving: false, runs: null, baselines: null, baseline: null, pollTimer: null, reports: null, branch: null, track: trackFromUrl(window.location.href), compare: {}, generation: 0 };

  /** The track filter lives in the page's query (?track=parallel; none for the single-call
      track), beside the hash route: a link or a reload keeps the chosen track's view, and
      the key is never part of it. */
  function trackFromUrl(href) {
    return knownTrack(new URL(href).searchParams.get("track"));
  }

  function trackUrl(href, track) {
    var url = new URL(href);
    if (track === "single") { url.searchParams.delete("track"); } else { url.searchParams.set("track", track); }
    return url.pathname + url.search + url.hash;
  }

  function readKey() {
    try { return window.sessionStorage.getItem(KEY_SLOT); } catch (e) { return null; }
  }

  function storeKey(key) {
    try { window.sessionStorage.setItem(KEY_SLOT, key); } catch (e) { /* private mode: in memory only */ }
  }

  function forgetKey() {
    try { window.sessionStorage.removeItem(KEY_SLOT); } catch (e) { /* nothing stored */ }
  }

  function show(sectionId) {
    ["signin", "problem", "history", "run", "case", "compare"].forEach(function (id) {
      $(id).hidden = id !== sectionId;
    });
  }

  function setLoading(text) {
    var notice = $("notice");
    notice.textContent = text || "";
    notice.classList.toggle("loading", !!text);
    $("main").setAttribute("aria-busy", text ? "true" : "false");
  }

  function say(text) {
    var notice = $("notice");
    notice.classList.remove("loading");
    notice.textContent = text || "";
  }

  function stopPolling() {
    if (state.pollTimer) { window.clearTimeout(state.pollTimer); state.pollTimer = null; }
  }

  /* ------------------------------------------------------------------ sign in / out */

  /** The sign-in form; focus moves to the key field only after an action (not on first load,
      so the skip link stays the first stop for keyboard users). */
  function showSignIn(message, keepFocus) {
    stopPolling();
    setLoading("");
    $("account").hidden = true;
    show("signin");
    $("signin-error").textContent = message || "";
    var input = $("key");
    input.value = "";
    input.setAttribute("aria-invalid", message ? "true" : "false");
    if (!keepFocus) { input.focus(); }
  }

  function onSignIn(event) {
    event.preventDefault();
    var key = $("key").value.trim();
    if (!key) {
      $("signin-error").textContent = "Enter your licence key.";
      $("key").setAttribute("aria-invalid", "true");
      $("key").focus();
      return;
    }
    var button = $("signin-submit");
    button.disabled = true;
    $("signin-error").textContent = "";
    setLoading("Checking your key…");
    api("licence", key).then(function (licence) {
      if (licence.tier === "checks") {
        var pack = licence.checks;
        var left = pack ? pack.remaining + " of " + pack.granted + " paid checks left" : "no paid checks left";
        throw new ApiError(403, "tier_insufficient", "This is a check-pack key (" + left + "); it pays for argument checks (POST /check). The team dashboard needs a team licence.");
      }
      if (licence.tier !== "team" || !licence.team) {
        throw new ApiError(403, "tier_insufficient", "This is a single-developer licence; the team dashboard needs a team licence.");
      }
      return licence;
    }).then(function (licence) {
      button.disabled = false;
      storeKey(key);
      state.key = key;
      state.team = licence.team;
      state.teamName = licence.team_name || licence.team;  // shown; the identity is in URLs
      state.managesMembers = licence.manages_members === true;
      $("key").value = "";
      $("key").setAttribute("aria-invalid", "false");
      say("");
      enter().catch(fail);
    }, function (err) {
      button.disabled = false;
      setLoading("");
      var message = err instanceof ApiError ? err.message : "Signing in failed.";
      $("signin-error").textContent = (err.status === 401 ? "That key was not accepted: " : "") + message;
      $("key").setAttribute("aria-invalid", "true");
      $("key").focus();
    });
  }

  function signOut(message) {
    forgetKey();
    clear($("member-new"));  // a key shown once is not left on the page
    state = { key: null, team: null, teamName: null, managesMembers: false, members: null, badge: null, badgeSaving: false, runs: null, baselines: null, baseline: null, pollTimer: null, reports: null, branch: null, track: state.track, compare: {}, generation: state.generation + 1 };
    stopPolling();
    if (window.location.hash) { window.history.replaceState(null, "", window.location.pathname + window.location.search); }
    showSignIn("");
    say(message || "Signed out. Your key has been forgotten by this tab.");
  }

  /** After a successful sign-in (or a reload with a stored key): load and route. */
  function enter() {
    $("account").hidden = false;
    $("account-team").textContent = "Team " + state.teamName;
    return loadTeam().then(route);
  }

  /** What a failed call means for the page: a bad key signs out, anything else is a problem. */
  function fail(err) {
    setLoading("");
    if (!state.key) { return; }  // an answer that arrived after signing out
    if (err instanceof ApiError && err.status === 401) {
      signOut("");
      $("signin-error").textContent = "Your key was not accepted: " + err.message + " Sign in again.";
      return;
    }
    show("problem");
    $("account").hidden = false;  // signing out stays in reach from the error state
    var text = err instanceof ApiError ? err.message : "Unexpected error: " + String(err);
    if (err instanceof ApiError && err.status === 403) { text = "This licence cannot open the team dashboard: " + err.message; }
    $("problem-text").textContent = text;
    $("problem-title").focus();
  }

  /* ------------------------------------------------------------------ team history */

  function loadTeam() {
    var team = encodeURIComponent(state.team);
    var generation = state.generation;
    setLoading("Loading runs and baselines…");
    return Promise.all([
      api("teams/" + team + "/runs?limit=50", state.key),
      // the newest page of baselines (as of runs): older ones are behind its `next` link
      api("teams/" + team + "/baselines?limit=50", state.key),
      // only the team's purchase key may list member keys: others do not ask
      state.managesMembers ? api("teams/" + team + "/keys", state.key) : Promise.resolve(null),
      // every key of the team sees whether its badge is public; without it the rest still shows
      api(badgePath(), state.key).catch(function (err) {
        if (err instanceof ApiError && err.status === 401) { throw err; }
        return { failed: true };
      })
    ]).then(function (answers) {
      if (generation !== state.generation) { return; }
      state.runs = answers[0].runs || [];
      state.baselines = answers[1];
      state.members = answers[2] ? answers[2].keys || [] : null;
      state.badge = answers[3];
      var names = baselineNames(state.baselines, state.runs);
      if (state.baseline === null || (state.baseline && names.indexOf(state.baseline) < 0)) {
        state.baseline = names.length ? names[0] : "";
      }
      setLoading("");
    });
  }

  /** The track filter: every track, each with how many of the team's runs it holds. */
  function renderTrackSelect() {
    var counts = {};
    (state.runs || []).forEach(function (run) { counts[trackOf(run)] = (counts[trackOf(run)] || 0) + 1; });
    var select = clear($("track-select"));
    TRACK_ORDER.forEach(function (name) {
      var n = counts[name] || 0;
      select.appendChild(el("option", { value: name, selected: name === state.track,
        text: TRACKS[name].name + " (" + n + " run" + (n === 1 ? "" : "s") + ")" }));
    });
    $("track-control").hidden = (state.runs || []).length === 0;
  }

  function renderFilters() {
    var names = baselineNames(state.baselines, state.runs);
    var select = clear($("baseline-select"));
    names.forEach(function (name) {
      select.appendChild(el("option", { value: name, text: name, selected: name === state.baseline }));
    });
    select.appendChild(el("option", { value: "", text: "All baselines", selected: state.baseline === "" }));
    $("baseline-control").hidden = names.length === 0;  // nothing to choose between yet

    var branches = branchNames(state.runs);
    if (state.branch === null || (state.branch && branches.indexOf(state.branch) < 0)) {
      // the baseline's own branch when it has runs (main's trend is main's), else every branch
      state.branch = branches.indexOf(state.baseline) >= 0 ? state.baseline : "";
    }
    var branchSelect = clear($("branch-select"));
    branches.forEach(function (name) {
      branchSelect.appendChild(el("option", { value: name, text: name, selected: name === state.branch }));
    });
    branchSelect.appendChild(el("option", { value: "", text: "All branches", selected: state.branch === "" }));
    $("branch-control").hidden = branches.length === 0;
    renderTrackSelect();
  }

  function renderHistory() {
    show("history");
    $("team-name").textContent = state.teamName;
    renderFilters();
    var runs = (state.runs || []).filter(function (run) {
      return trackOf(run) === state.track &&
        (!state.baseline || runBaseline(run) === state.baseline) &&
        (!state.branch || branchOf(run) === state.branch);
    });
    var empty = runs.length === 0;
    $("empty").hidden = !empty;
    Array.prototype.forEach.call(document.querySelectorAll(".api-origin"), function (node) {
      node.textContent = window.location.origin;  // the commands name this very service
    });
    $("history-body").hidden = empty;
    renderMembers();  // a team with no runs yet manages its member keys too
    renderBadge();
    if (empty) {
      $("empty-text").textContent = (state.runs || []).length === 0
        ? "Team " + state.teamName + " has no hosted runs yet."
        : "No runs of the " + TRACKS[state.track].name.toLowerCase() + " track " + (state.branch ? "of branch “" + state.branch + "” " : "") + "were measured against " + (state.baseline ? "the baseline “" + state.baseline + "”" : "any baseline") + " yet" +
          (state.track === "single" ? "." : " (submit one with --track " + state.track + ").");
      return;
    }
    renderLatest(runs[0]);
    renderCharts(scoredHistory(runs, "", state.track));
    renderRunsTable(runs);
    renderBaselines();
  }

  function baselineIdsFor(name, track) {
    var ids = {};
    var byName = (state.baselines && state.baselines.baselines) || {};
    Object.keys(byName).forEach(function (n) {
      if (name && n !== name) { return; }
      (byName[n] || []).forEach(function (b) {
        if (trackOf(b) === track) { ids[b.run_id] = true; }
      });
    });
    return ids;
  }

  /** "Exact turns 12 of 300 · Call precision 97.5% · ..." for a summary of `track`. */
  function figuresLine(track, s) {
    return trackMetrics(track, false).map(function (m) {
      return m.label + " " + figureText(figure(m, s));
    }).join(" · ");
  }

  function renderLatest(run) {
    var box = clear($("latest"));
    var s = run.summary;
    box.appendChild(el("p", {}, [
      el("a", { href: "#/runs/" + encodeURIComponent(run.run_id), text: run.run_id }), " ",
      badge(run.status), " ", run.verdict ? badge(run.verdict) : null,
      " " + (run.ref || "") + " @ " + shortCommit(run.commit) + ", " + formatTime(run.created_at)
    ]));
    if (s) {
      box.appendChild(el("p", { id: "latest-figures", "data-track": trackOf(run),
        text: TRACKS[knownTrack(trackOf(run))].name + " track: " + figuresLine(trackOf(run), s) }));
    }
  }

  function renderCharts(history) {
    var track = state.track;
    var counts = clear($("count-charts"));
    var cats = clear($("category-charts"));
    counts.setAttribute("data-track", track);
    cats.setAttribute("data-track", track);
    $("track-legend").textContent = "Drawn: " + TRACKS[track].legend;
    $("categories-hint").textContent = TRACKS[track].categories;
    if (history.length === 0) {
      counts.appendChild(el("p", { "class": "hint", text: "No scored runs yet: charts appear once a run has been scored." }));
      return;
    }
    var ids = baselineIdsFor(state.baseline, track);
    trackMetrics(track, true).forEach(function (metric) {
      var series = metricSeries(history, metric, ids);
      if (series.length === 0) {
        counts.appendChild(el("p", { "class": "hint chart-missing", text: metric.label + ": not recorded by these runs." }));
        return;
      }
      counts.appendChild(lineChart(metric.label, "", series));
    });
    categoriesOf(history, track).forEach(function (category) {
      cats.appendChild(lineChart(category, "", categorySeries(history, category, ids), true));
    });
  }

  function renderRunsTable(runs) {
    $("runs-exact-head").textContent = trackMetrics(state.track, false)[0].label;
    var body = clear($("runs-table").tBodies[0]);
    runs.forEach(function (run) {
      var s = run.summary;
      body.appendChild(el("tr", {}, [
        el("th", { scope: "row", "class": "run-id" }, [el("a", { href: "#/runs/" + encodeURIComponent(run.run_id), text: run.run_id })]),
        el("td", { text: formatTime(run.created_at) }),
        el("td", { "class": "wrap", title: run.ref || "", text: branchOf(run) }),
        el("td", {}, [el("code", { text: shortCommit(run.commit) })]),
        el("td", {}, [badge(run.status)]),
        el("td", {}, [badge(run.verdict)]),
        el("td", { "class": "num", text: exactFigure(s) }),
        el("td", { "class": "pick" }, run.status === "scored" ? [compareBox(run)] : [])
      ]));
    });
    updateCompareButton();
  }

  function compareBox(run) {
    var box = el("input", { type: "checkbox", "aria-label": "Compare " + run.run_id, "data-run": run.run_id });
    box.checked = state.compare[run.run_id] === true;
    box.addEventListener("change", function () {
      if (box.checked) { state.compare[run.run_id] = true; } else { delete state.compare[run.run_id]; }
      updateCompareButton();
    });
    return box;
  }

  /** The two runs ticked for comparison, older first (by the runs list, newest first). */
  function pickedRuns() {
    return (state.runs || []).filter(function (run) { return state.compare[run.run_id] === true; })
      .map(function (run) { return run.run_id; }).reverse();
  }

  function updateCompareButton() {
    var picked = pickedRuns();
    var tracks = (state.runs || []).filter(function (run) { return picked.indexOf(run.run_id) >= 0; })
      .map(trackOf).reverse();
    var mixed = picked.length === 2 && tracks[0] !== tracks[1];
    $("compare-runs").disabled = picked.length !== 2 || mixed;
    $("compare-hint").textContent = mixed ? mixedTracksText(picked[0], tracks[0], picked[1], tracks[1])
      : picked.length === 2 ? "Compare " + picked[0] + " with " + picked[1] + "."
        : "Tick two scored runs of one track to compare them case by case (" + picked.length + " ticked).";
  }

  /** Why two runs of different tracks are not compared: they count different things. */
  function mixedTracksText(idA, trackA, idB, trackB) {
    return "Run " + idA + " is a run of the " + trackA + " track and run " + idB + " of the " + trackB +
      " track: runs of different tracks count different things and are not compared. Tick two runs of one track.";
  }

  function renderMembers() {
    $("members").hidden = state.members === null || state.members === undefined;
    var box = clear($("members-list"));
    if (!state.members) { return; }
    if (state.members.length === 0) {
      box.appendChild(el("p", { "class": "hint", text: "No member keys yet." }));
      return;
    }
    var rows = state.members.map(function (m) {
      var action = el("td", {});
      if (m.status === "active") {
        var revoke = el("button", { type: "button", "class": "button-secondary", "aria-label": "Revoke " + m.key_id, text: "Revoke" });
        revoke.addEventListener("click", function () { revokeMember(m.key_id, revoke); });
        action.appendChild(revoke);
      }
      return el("tr", {}, [
        el("th", { scope: "row" }, [el("code", { text: m.key_id })]),
        el("td", { text: m.status }),
        el("td", { text: formatTime(m.issued_at) }),
        action
      ]);
    });
    box.appendChild(scrollTable({
      label: "Member keys", caption: "Member keys, oldest first", rows: rows,
      head: [{ text: "Key id" }, { text: "Status" }, { text: "Issued" }, { text: "Action" }]
    }));
  }

  /** The purchase key manages member keys here as with `toolcall300 team keys` (docs/tenancy.md). */
  function membersPath() {
    return "teams/" + encodeURIComponent(state.team) + "/keys";
  }

  function reloadMembers() {
    var generation = state.generation;
    return api(membersPath(), state.key).then(function (answer) {
      if (generation !== state.generation) { return; }
      state.members = answer.keys || [];
      renderMembers();
    });
  }

  function memberProblem(err) {
    var box = clear($("member-new"));
    box.appendChild(el("p", { "class": "field-error", role: "alert", text: err instanceof ApiError ? err.message : "That did not work; try again." }));
  }

  function issueMember() {
    var button = $("member-issue");
    var generation = state.generation;
    button.disabled = true;
    clear($("member-new"));
    api(membersPath(), state.key, false, "POST").then(function (made) {
      return afterMembersChange(generation, function (box) {
        box.appendChild(el("p", { text: "New member key " + made.key_id + ", shown once: copy it now and give it to the member as TOOLCALL300_LICENCE." }));
        box.appendChild(el("p", {}, [el("code", { id: "member-new-key", text: made.key })]));
      });
    }).catch(memberProblem).then(function () { button.disabled = false; });
  }

  /** The list is refreshed before the outcome is shown, so the page never says a key exists
      (or is revoked) while the list beside it still says otherwise. A refresh that fails
      still shows the outcome (a new key is shown only once) and says the list is stale. An
      answer that arrives after signing out (`generation` moved on) shows nothing: a key
      shown once is never put back on a signed-out page. */
  function afterMembersChange(generation, show) {
    if (generation !== state.generation) { return Promise.resolve(); }
    function outcome(stale) {
      if (generation !== state.generation) { return; }
      var box = clear($("member-new"));
      show(box);
      if (stale) {
        box.appendChild(el("p", { "class": "field-error", role: "alert", text: "The list of member keys could not be refreshed; reload the page to see it." }));
      }
    }
    return reloadMembers().then(function () { outcome(false); }, function () { outcome(true); });
  }

  function revokeMember(keyId, button) {
    var generation = state.generation;
    button.disabled = true;
    api(membersPath() + "/" + encodeURIComponent(keyId), state.key, false, "DELETE").then(function () {
      return afterMembersChange(generation, function (box) {
        box.appendChild(el("p", { text: "Member key " + keyId + " is revoked." }));
      });
    }).catch(function (err) { button.disabled = false; memberProblem(err); });
  }

  /* ------------------------------------------------------------------ README badge */

  function badgePath() {
    return "teams/" + encodeURIComponent(state.team) + "/badge";
  }

  /** The README badge: whether it is public, for every key of the team; the switch for the
      purchase key only (the API answers a member key's change 403 owner_only); while it is
      public, the Markdown line `toolcall300 team badge on` prints and a preview of the image.
      What it says is what the API last answered: a change shows only once it is stored. */
  function renderBadge() {
    var view = state.badge;
    $("readme-badge").hidden = !view;
    if (!view) { return; }
    var known = !view.failed;
    var shown = known && view.public === true;
    var sw = $("readme-badge-switch");
    $("readme-badge-control").hidden = !known || !state.managesMembers;
    $("readme-badge-owner-only").hidden = !known || state.managesMembers;
    if (!state.badgeSaving) {
      sw.checked = shown;
      $("readme-badge-state").textContent = !known ? "The badge setting could not be loaded; reload the page to see it."
        : shown ? "The badge is public: anyone with its address sees it."
          : "The badge is private: its address answers 404 until the team makes it public.";
    }
    sw.setAttribute("aria-disabled", state.badgeSaving ? "true" : "false");
    $("readme-badge-public").hidden = !shown;
    $("readme-badge-markdown").textContent = shown ? view.markdown : "";
    previewBadge(shown ? view.badge_url : null);
  }

  /** The badge's image, fetched without the key (it is public) and shown from a blob: URL,
      so the page's CSP admits blob: images only, never an image from an address. */
  var preview = { url: null, objectUrl: null };

  function previewBadge(url) {
    if (url === preview.url) { return; }
    var img = $("readme-badge-preview");
    if (preview.objectUrl) { URL.revokeObjectURL(preview.objectUrl); }
    preview = { url: url, objectUrl: null };
    img.removeAttribute("src");
    img.setAttribute("alt", "");
    if (!url) { return; }
    var mine = preview;
    fetch(url, { cache: "no-store", credentials: "omit", referrerPolicy: "no-referrer" }).then(function (response) {
      if (!response.ok) { throw new Error("status " + response.status); }
      return response.blob();
    }).then(function (blob) {
      if (preview !== mine) { return; }  // switched off (or another badge) meanwhile
      mine.objectUrl = URL.createObjectURL(blob);
      img.setAttribute("alt", "Preview of the badge of branch main");
      img.setAttribute("src", mine.objectUrl);
    }).catch(function () {
      if (preview === mine) { img.setAttribute("alt", "The preview could not be loaded."); }
    });
  }

  /** The purchase key's switch: PUT the wanted setting, then show what the API stored; the
      switch keeps its focus and takes no second change while one is on its way. */
  function switchBadge(event) {
    var sw = event.target;
    if (state.badgeSaving) { event.preventDefault(); return; }
    var wanted = sw.checked;
    var generation = state.generation;
    state.badgeSaving = true;
    $("readme-badge-error").textContent = "";
    $("readme-badge-state").textContent = wanted ? "Making the badge public…" : "Making the badge private…";
    renderBadge();
    api(badgePath(), state.key, false, "PUT", { "public": wanted }).then(function (view) {
      if (generation !== state.generation) { return; }
      state.badge = view;
    }, function (err) {
      if (generation !== state.generation) { return; }
      if (err instanceof ApiError && err.status === 401) { fail(err); return; }
      $("readme-badge-error").textContent = "The badge was not changed: " + (err.message || String(err));
    }).then(function () {
      if (generation !== state.generation) { return; }
      state.badgeSaving = false;
      renderBadge();
    });
  }

  /** Each baseline name's history of the chosen track, with that track's own figures. */
  function renderBaselines() {
    var box = clear($("baselines"));
    var track = state.track;
    var byName = (state.baselines && state.baselines.baselines) || {};
    var columns = trackMetrics(track, false).filter(function (m) { return m.column; });
    var names = Object.keys(byName).filter(function (n) {
      return (!state.baseline || n === state.baseline) &&
        (byName[n] || []).some(function (b) { return trackOf(b) === track; });
    }).sort();
    box.setAttribute("data-track", track);
    if (names.length === 0) {
      box.appendChild(el("p", { "class": "hint", text: "No baseline of the " + TRACKS[track].name.toLowerCase() + " track has been set yet. The first scored run of the track on a baseline name sets it." }));
      return;
    }
    names.forEach(function (name) {
      var entries = (byName[name] || []).filter(function (b) { return trackOf(b) === track; }).reverse();
      var rows = entries.map(function (b) {
        return el("tr", {}, [
          el("td", { text: formatTime(b.set_at) }),
          el("th", { scope: "row", "class": "run-id" }, [el("a", { href: "#/runs/" + encodeURIComponent(b.run_id), text: b.run_id })]),
          el("td", { text: b.ref || "" }),
          el("td", {}, [el("code", { text: shortCommit(b.commit) })])
        ].concat(columns.map(function (m) {
          return el("td", { "class": "num", text: figureText(figure(m, b.summary)) });
        })));
      });
      box.appendChild(scrollTable({
        label: "Baseline " + name + " history, " + TRACKS[track].name.toLowerCase() + " track",
        caption: "Baseline “" + name + "”, " + TRACKS[track].name.toLowerCase() + " track, newest first", rows: rows,
        head: [{ text: "Set at" }, { text: "Run" }, { text: "Ref" }, { text: "Commit" }].concat(columns.map(function (m) {
          return { text: m.label, num: true };
        }))
      }));
    });
  }

  /* ------------------------------------------------------------------ one run */

  function openRun(runId, quiet) {
    var generation = state.generation;
    stopPolling();
    if (!quiet) { setLoading("Loading run " + runId + "…"); }
    return api("runs/" + encodeURIComponent(runId), state.key).then(function (run) {
      if (generation !== state.generation || currentRunId() !== runId) { return; }
      setLoading("");
      renderRun(run, !quiet);
      if (run.status === "queued" || run.status === "running") {
        state.pollTimer = window.setTimeout(function () { openRun(runId, true).catch(fail); }, POLL_MS);
      }
    });
  }

  function fact(term, value) {
    return [el("dt", { text: term }), el("dd", {}, [value])];
  }

  function renderRun(run, moveFocus) {
    show("run");
    $("run-title").textContent = "Run " + run.run_id;
    var body = clear($("run-body"));
    var adapter = run.adapter || {};
    var adapterText = adapter.kind === "image" ? adapter.image : (adapter.command || []).join(" ");
    var facts = [].concat(
      fact("Status", badge(run.status)),
      fact("Verdict", run.verdict ? badge(run.verdict) : document.createTextNode(run.status === "failed" ? "none (the run failed)" : "not yet")),
      fact("Ref", document.createTextNode(run.ref || "")),
      fact("Commit", el("code", { text: run.commit || "" })),
      fact("Baseline", document.createTextNode(runBaseline(run))),
      fact("Track", el("span", { id: "run-track", text: TRACKS[knownTrack(trackOf(run))].name + " (" + trackOf(run) + ")" })),
      fact("Adapter", el("code", { text: (adapter.kind ? adapter.kind + ": " : "") + (adapterText || "") })),
      fact("Created", document.createTextNode(formatTime(run.created_at))),
      fact("Started", document.createTextNode(formatTime(run.started_at) || "not yet")),
      fact("Finished", document.createTextNode(formatTime(run.finished_at) || "not yet"))
    );
    if (run.sandbox) {
      var notes = (run.sandbox.notes || []).join("; ");
      facts = facts.concat(fact("Sandbox", document.createTextNode(
        (run.sandbox.network_isolated ? "network isolated" : "network NOT isolated") + (notes ? " (" + notes + ")" : ""))));
    }
    body.appendChild(el("dl", { "class": "facts panel" }, facts));
    if (run.report_url && run.status === "scored") { body.appendChild(renderDownload(run)); }

    if (run.status === "queued" || run.status === "running") {
      body.appendChild(el("p", { "class": "panel", role: "status", text: "This run is " + run.status + ". The page checks it again every few seconds." }));
    }
    if (run.failure) { body.appendChild(renderFailure(run.failure)); }
    if (run.summary) { body.appendChild(renderScores(run)); }
    body.appendChild(renderComparison(run));
    if (run.report_url && run.status === "scored") { body.appendChild(renderFailedCases(run)); }
    if (moveFocus) { $("run-title").focus(); }
  }

  /* ------------------------------------------------------------------ two runs */

  /** Two runs of one track, case by case; two runs of different tracks are refused with
      the reason before either report is fetched. */
  function openCompare(idA, idB) {
    var generation = state.generation;
    stopPolling();
    setLoading("Comparing " + idA + " with " + idB + "…");
    function load(id) {
      return api("runs/" + encodeURIComponent(id), state.key).then(function (run) {
        if (!run.report_url) { throw new ApiError(404, "no_report", "Run " + id + " has no report: only scored runs can be compared."); }
        return run;
      });
    }
    function withReport(run) {
      return runReport(run).then(function (report) { return { run: run, report: report }; });
    }
    return Promise.all([load(idA), load(idB)]).then(function (runs) {
      if (trackOf(runs[0]) !== trackOf(runs[1])) { return runs; }
      return Promise.all([withReport(runs[0]), withReport(runs[1])]);
    }).then(function (both) {
      if (generation !== state.generation || !isRoute(currentCompare(), idA, idB)) { return; }
      setLoading("");
      if (!both[0].run) { renderMixedCompare(both[0], both[1]); return; }
      renderCompare(both[0], both[1]);
    });
  }

  function renderMixedCompare(runA, runB) {
    show("compare");
    $("compare-title").textContent = "Run " + runA.run_id + " and " + runB.run_id + " are not compared";
    var body = clear($("compare-body"));
    body.appendChild(el("p", { id: "compare-refused", "class": "panel problem", role: "alert",
      text: mixedTracksText(runA.run_id, trackOf(runA), runB.run_id, trackOf(runB)) }));
    $("compare-title").focus();
  }

  /** The figures of A and B of their track, and B − A in the words of each one's direction. */
  function compareFiguresTable(track, sa, sb) {
    var rows = trackMetrics(track, false).map(function (m) {
      var fa = figure(m, sa), fb = figure(m, sb);
      var delta = fa && fb ? (fa.percent ? pointsDelta(fb.value, fa.value) : fb.value - fa.value) : 0;
      var verdict = fa && fb ? assess(m.key, delta, track) : "same";
      return el("tr", {}, [
        el("th", { scope: "row", text: m.label }),
        el("td", { "class": "num", text: figureText(fa) }),
        el("td", { "class": "num", text: figureText(fb) }),
        fa && fb ? changeCell(delta, verdict, fa.percent) : el("td", { "class": "num", text: "n/a" })
      ]);
    });
    return scrollTable({
      label: "Figures of A and B", caption: TRACKS[knownTrack(track)].name + " track", id: "compare-counts", rows: rows,
      head: [{ text: "Figure" }, { text: "A", num: true }, { text: "B", num: true }, { text: "B − A", num: true }]
    });
  }

  function renderCompare(a, b) {
    show("compare");
    $("compare-title").textContent = "Run " + a.run.run_id + " compared with " + b.run.run_id;
    var body = clear($("compare-body"));
    var sa = a.run.summary || {}, sb = b.run.summary || {};
    function who(x) {
      return el("span", {}, [el("a", { href: "#/runs/" + encodeURIComponent(x.run.run_id), text: x.run.run_id }),
        " (" + branchOf(x.run) + " @ " + shortCommit(x.run.commit) + ", " + formatTime(x.run.created_at) + ")"]);
    }
    body.appendChild(el("dl", { "class": "facts panel" }, [].concat(fact("A", who(a)), fact("B", who(b)))));
    body.appendChild(compareFiguresTable(trackOf(a.run), sa, sb));
    var moved = compareCases(a.report, b.report);
    function list(id, title, entries, failedIn) {
      return el("div", { id: id, "class": "panel" }, [
        el("h3", { text: title + " (" + entries.length + ")" }),
        entries.length ? el("ul", { "class": "case-moves" }, entries.map(function (e) {
          var run = failedIn === "b" ? b.run : a.run;
          return el("li", {}, [el("a", { href: caseHref(run.run_id, e.id), text: e.id }),
            " " + label(e.category || "") + ": " + e.a.replace(/_/g, " ") + " → " + e.b.replace(/_/g, " ")]);
        })) : el("p", { "class": "hint", text: "None." })
      ]);
    }
    body.appendChild(list("compare-broken", "Broke in B (passed in A)", moved.broken, "b"));
    body.appendChild(list("compare-fixed", "Fixed in B (failed in A)", moved.fixed, "a"));
    body.appendChild(list("compare-changed", "Failed in both, another outcome", moved.changed, "b"));
    if (moved.missing.length) { body.appendChild(list("compare-missing", "In one report only", moved.missing, "b")); }
    $("compare-title").focus();
  }

  /* ------------------------------------------------------------------ failed cases */

  /** The link to one case's view within a run (the route #/runs/RUN/cases/CASE). */
  function caseHref(runId, caseId) {
    return "#/runs/" + encodeURIComponent(runId) + "/cases/" + encodeURIComponent(caseId);
  }

  /** The run's stored report (its score holds per_case and failure_details), fetched once
      per run and page: a stored report never changes. */
  function runReport(run) {
    state.reports = state.reports || {};
    if (!state.reports[run.run_id]) {
      state.reports[run.run_id] = api(run.report_url, state.key).catch(function (err) {
        delete state.reports[run.run_id];
        throw err;
      });
    }
    return state.reports[run.run_id];
  }

  /** The failed cases of a report, in corpus order: [{id, category, outcome, detail}]. */
  function failedCases(report) {
    var score = (report && report.score) || {};
    var details = score.failure_details || {};
    return (score.per_case || []).filter(function (row) { return row && row.passed === false; })
      .map(function (row) {
        return { id: String(row.id), category: String(row.category || ""), outcome: String(row.outcome || ""), detail: details[row.id] || null };
      });
  }

  function renderFailedCases(run) {
    var list = el("div", { id: "failed-cases-list" }, [el("p", { "class": "hint", text: "Loading the failed cases…" })]);
    var section = el("section", { id: "failed-cases", "aria-labelledby": "failed-cases-title" }, [
      el("h2", { id: "failed-cases-title", text: "Failed cases" }),
      el("p", { "class": "hint", text: "Each case id opens its input, the expected call or refusal, what came back, how they differ and the rule that decides it." }),
      list
    ]);
    runReport(run).then(function (report) {
      var failed = failedCases(report);
      clear(list);
      if (!failed.length) { list.appendChild(el("p", { "class": "hint", text: "None: every case passed." })); return; }
      var items = el("ul", { "class": "ids case-links" }, failed.map(function (c) {
        return el("li", {}, [el("a", { href: caseHref(run.run_id, c.id), text: c.id }), " " + label(c.category) + " · " + c.outcome.replace(/_/g, " ")]);
      }));
      list.appendChild(el("p", { text: failed.length + " case" + (failed.length === 1 ? "" : "s") + " not passed." }));
      list.appendChild(failed.length > LONG_LIST ? el("details", {}, [el("summary", { text: "Show all " + failed.length + " failed cases" }), items]) : items);
    }).catch(function (err) {
      clear(list);
      if (err instanceof ApiError && err.status === 401) { fail(err); return; }
      list.appendChild(el("p", { "class": "hint", text: "The failed cases could not be loaded: " + (err.message || String(err)) }));
    });
    return section;
  }

  function openCase(runId, caseId) {
    var generation = state.generation;
    stopPolling();
    setLoading("Loading case " + caseId + "…");
    return api("runs/" + encodeURIComponent(runId), state.key).then(function (run) {
      if (!run.report_url) { throw new ApiError(404, "no_report", "This run has no report: only a scored run has cases to show."); }
      return runReport(run).then(function (report) {
        var found = failedCases(report).filter(function (c) { return c.id === caseId; })[0] || null;
        return caseRationale(run, caseId, found).then(function (why) {
          if (generation !== state.generation || !isRoute(currentCase(), runId, caseId)) { return; }
          setLoading("");
          renderCase(run, caseId, found, why);
        });
      });
    });
  }

  /** Why a case is labelled as it is: a single-call case's from GET /cases/{id}/rationale
      (the API knows the main corpus's ids only, and says when a licence lacks it); another
      track's from its report's own failure details, where the track's scorer put its
      corpus's rationale row (docs/tracks.md). */
  function caseRationale(run, caseId, found) {
    if (trackOf(run) !== "single") {
      var d = (found && found.detail) || {};
      return Promise.resolve(typeof d.rationale === "string" && d.rationale
        ? { ok: true, body: { rule: typeof d.rule === "string" ? d.rule : "", rationale: d.rationale } }
        : { ok: false, err: null });
    }
    return api("cases/" + encodeURIComponent(caseId) + "/rationale", state.key).then(
      function (body) { return { ok: true, body: body }; },
      function (err) { return { ok: false, err: err }; });
  }

  function viewRow(term, node) {
    return [el("dt", { text: term }), el("dd", {}, [node])];
  }

  function renderCase(run, caseId, found, why) {
    show("case");
    $("case-back").setAttribute("href", "#/runs/" + encodeURIComponent(run.run_id));
    $("case-title").textContent = "Case " + caseId;
    var body = clear($("case-body"));
    if (!found) {
      body.appendChild(el("p", { "class": "panel", text: "This case passed in run " + run.run_id + ", or the run's report does not list it: only failed cases have a view." }));
      $("case-title").focus();
      return;
    }
    var d = found.detail || {};
    var rows = [].concat(
      viewRow("Run", el("a", { href: "#/runs/" + encodeURIComponent(run.run_id), text: run.run_id })),
      viewRow("Category", document.createTextNode(label(found.category))),
      viewRow("Outcome", el("code", { text: found.outcome })),
      viewRow("Input", el("pre", { "class": "case-text", id: "case-input", tabindex: "0", text: typeof d.input === "string" ? d.input : trackOf(run) === "deltas"
        ? "(a stream of provider events: its report keeps no text; the deltas corpus holds the events under this case id)"
        : "(this report predates the case view: score locally with --show-failures)" })),
      viewRow("Expected", el("pre", { "class": "case-text", id: "case-expected", text: d.expected || "" })),
      viewRow("Returned", el("pre", { "class": "case-text", id: "case-returned", text: d.returned || "" })),
      viewRow("Difference", Array.isArray(d.diff) && d.diff.length
        ? el("ul", { id: "case-diff" }, d.diff.map(function (line) { return el("li", {}, [el("code", { text: String(line) })]); }))
        : document.createTextNode("not recorded")),
      viewRow("Rule", el("span", { id: "case-rule", text: d.rule || "" })),
      viewRow("Graded by", el("span", { id: "case-graded", text: d.graded || "" }))
    );
    var whyNode;
    if (why.ok && why.body && typeof why.body.rationale === "string") {
      whyNode = el("p", { id: "case-rationale", text: (why.body.rule ? why.body.rule + ": " : "") + why.body.rationale });
    } else if (!why.ok && why.err instanceof ApiError && why.err.status === 403) {
      whyNode = el("p", { id: "case-rationale", "class": "hint", text: "Your licence does not include the rationale." });
    } else {
      whyNode = el("p", { id: "case-rationale", "class": "hint", text: "No rationale is available for this case." });
    }
    rows = rows.concat(viewRow("Why", whyNode));
    body.appendChild(el("dl", { "class": "facts panel case-view" }, rows));
    $("case-title").focus();
  }

  function renderFailure(failure) {
    return el("section", { "class": "panel problem", "aria-labelledby": "failure-title" }, [
      el("h2", { id: "failure-title", text: "Why it failed" }),
      el("p", {}, [el("strong", { text: FAILURE_TEXT[failure.reason] || "The run failed." }), " ", el("code", { text: failure.reason || "" })]),
      failure.detail ? el("p", { text: failure.detail }) : null,
      el("h3", { id: "log-title", text: "Log tail (stderr)" }),
      el("pre", { "class": "log", tabindex: "0", "aria-labelledby": "log-title", text: failure.stderr_tail || "(empty)" })
    ]);
  }

  /** The run's figures, its own track's. */
  function renderScores(run) {
    var rows = trackMetrics(trackOf(run), false).map(function (m) {
      return el("tr", {}, [
        el("th", { scope: "row", text: m.label }),
        el("td", { "class": "num", text: figureText(figure(m, run.summary)) })
      ]);
    });
    return el("section", { "aria-labelledby": "scores-title" }, [
      el("h2", { id: "scores-title", text: "Scores" }),
      scrollTable({ labelledBy: "scores-title", id: "scores-table", rows: rows })
    ]);
  }

  function renderComparison(run) {
    var section = el("section", { id: "comparison", "aria-labelledby": "comparison-title" }, [
      el("h2", { id: "comparison-title", text: "Compared with the baseline" })
    ]);
    var cmp = run.comparison;
    if (!cmp) {
      section.appendChild(el("p", { text: run.verdict === "baseline_set"
        ? "This run set the baseline “" + runBaseline(run) + "”: there was no earlier baseline to compare it with."
        : run.status === "scored" ? "No comparison was recorded for this run."
          : run.status === "failed" ? "A failed run is not compared with the baseline."
            : "A comparison appears once the run has been scored." }));
      return section;
    }
    section.appendChild(el("p", {}, [
      "Measured against baseline run ",
      el("a", { href: "#/runs/" + encodeURIComponent(cmp.baseline_run_id), text: cmp.baseline_run_id }),
      ". ",
      el("strong", { text: cmp.regressed ? "Regression." : "No regression." })
    ]));
    if ((cmp.reasons || []).length) {
      section.appendChild(el("ul", { "class": "reasons" }, cmp.reasons.map(function (r) { return el("li", { text: r }); })));
    }
    section.appendChild(countsTable(cmp.counts || {}, trackOf(run)));
    section.appendChild(movesBlock(categoryMoves(cmp, trackOf(run))));
    section.appendChild(flippedBlock(cmp.flipped || { fixed: [], broken: [] }, run.run_id));
    return section;
  }

  /** The comparison's counts as the API sent them, in the order and words of the run's track
      (a count the page has no words for is shown under its own name). */
  function countsTable(counts, track) {
    var metrics = trackMetrics(track, false);
    var keys = metrics.map(function (m) { return m.key; });
    var names = keys.filter(function (k) { return k in counts; })
      .concat(Object.keys(counts).filter(function (k) { return keys.indexOf(k) < 0; }).sort());
    var rows = names.map(function (name) {
      var c = counts[name];
      var verdict = assess(name, c.delta, track);
      var metric = metrics.filter(function (m) { return m.key === name; })[0];
      return el("tr", {}, [
        el("th", { scope: "row", text: metric ? metric.label : NEUTRAL_COUNTS[name] || label(name) }),
        el("td", { "class": "num", text: valueText(metric, c.baseline) }),
        el("td", { "class": "num", text: valueText(metric, c.current) }),
        changeCell(metric && metric.fraction ? pointsDelta(100 * c.current, 100 * c.baseline) : c.delta, verdict, metric && metric.fraction)
      ]);
    });
    return scrollTable({
      label: "Counts compared with the baseline", caption: "Counts", id: "comparison-counts", rows: rows,
      head: [{ text: "Count" }, { text: "Baseline", num: true }, { text: "This run", num: true }, { text: "Change", num: true }]
    });
  }

  /** A change, signed, with its better or worse (a share's change in percentage points). */
  function changeCell(delta, verdict, points) {
    var text = (points ? (delta > 0 ? "+" : "") + delta.toFixed(1) + " pts" : signed(delta)) +
      (verdict === "same" ? "" : " (" + verdict + ")");
    return el("td", { "class": "num" }, [el("span", { "class": verdict === "same" ? "" : "delta-" + verdict, text: text })]);
  }

  function movesBlock(moves) {
    function list(id, title, entries, kind) {
      return el("div", { id: id }, [
        el("h3", { text: title + " (" + entries.length + ")" }),
        entries.length ? el("ul", {}, entries.map(function (e) {
          return el("li", {}, [el("code", { text: e.name }), ": " + e.baseline + " → " + e.current + " ",
            el("span", { "class": "delta-" + kind, text: "(" + signed(e.delta) + ")" })]);
        })) : el("p", { "class": "hint", text: "None." })
      ]);
    }
    return el("div", { "class": "panel" }, [
      list("categories-fell", "Categories that fell", moves.fell, "worse"),
      list("categories-rose", "Categories that rose", moves.rose, "better"),
      el("p", { "class": "hint", text: moves.same.length + " categor" + (moves.same.length === 1 ? "y" : "ies") + " unchanged." })
    ]);
  }

  function flippedBlock(flipped, runId) {
    function list(id, title, ids, linked) {
      var items = el("ul", { "class": "ids" }, ids.map(function (c) {
        return el("li", {}, [linked ? el("a", { href: caseHref(runId, c), text: c }) : document.createTextNode(c)]);
      }));
      return el("div", { id: id }, [
        el("h3", { text: title + " (" + ids.length + ")" }),
        ids.length === 0 ? el("p", { "class": "hint", text: "None." })
          // A long list is folded so the rest of the run stays in reach.
          : ids.length > LONG_LIST ? el("details", {}, [el("summary", { text: "Show all " + ids.length + " case ids" }), items])
            : items
      ]);
    }
    return el("div", { "class": "panel" }, [
      list("flipped-broken", "Cases that broke (passed in the baseline, fail now)", flipped.broken || [], true),
      list("flipped-fixed", "Cases that were fixed (failed in the baseline, pass now)", flipped.fixed || [], false)
    ]);
  }

  function renderDownload(run) {
    var button = el("button", { type: "button", id: "download-report", text: "Download report (JSON)" });
    button.addEventListener("click", function () { downloadReport(run, button); });
    return el("div", { "class": "actions" }, [button]);
  }

  /** Fetch the report with the bearer header and hand it over as a blob URL (a plain link
      would need the key in the URL, which the service refuses). */
  function downloadReport(run, button) {
    button.disabled = true;
    setLoading("Fetching the report…");
    api(run.report_url, state.key, true).then(function (blob) {
      var url = URL.createObjectURL(new Blob([blob], { type: "application/json" }));
      var link = el("a", { href: url, download: run.run_id + "-report.json", hidden: true });
      document.body.appendChild(link);
      link.click();
      window.setTimeout(function () { URL.revokeObjectURL(url); link.remove(); }, 1000);
      say("Report downloaded as " + run.run_id + "-report.json.");
    }).catch(function (err) {
      setLoading("");
      if (err instanceof ApiError && err.status === 401) { fail(err); return; }
      say("The report could not be downloaded: " + (err.message || String(err)));
    }).then(function () { button.disabled = false; });
  }

  /* ------------------------------------------------------------------ routing */

  function currentRunId() {
    var m = /^#\/runs\/([^/?#]+)$/.exec(window.location.hash);
    return m ? decodeURIComponent(m[1]) : null;
  }

  /** [run id, case id] of a case view's route, or null. */
  function currentCase() {
    var m = /^#\/runs\/([^/?#]+)\/cases\/([^/?#]+)$/.exec(window.location.hash);
    return m ? [decodeURIComponent(m[1]), decodeURIComponent(m[2])] : null;
  }

  /** Whether a route's pair is still [a, b]: an answer for a comparison or a case the reader
      has since left (for another one) is not drawn under the other's address. */
  function isRoute(pair, a, b) {
    return pair !== null && pair[0] === a && pair[1] === b;
  }

  /** [run A, run B] of a comparison's route (#/compare/A/B), or null. */
  function currentCompare() {
    var m = /^#\/compare\/([^/?#]+)\/([^/?#]+)$/.exec(window.location.hash);
    return m ? [decodeURIComponent(m[1]), decodeURIComponent(m[2])] : null;
  }

  function route() {
    if (!state.key) { return; }
    var pair = currentCompare();
    if (pair) {
      return openCompare(pair[0], pair[1]).catch(fail);
    }
    var shown = currentCase();
    if (shown) {
      return openCase(shown[0], shown[1]).catch(fail);
    }
    var runId = currentRunId();
    if (runId) {
      return openRun(runId).catch(fail);
    }
    stopPolling();
    var fromRun = !$("run").hidden || !$("case").hidden || !$("compare").hidden;
    renderHistory();
    if (fromRun) { $("history-title").focus(); }
  }

  function reload() {
    if (!state.key) { showSignIn(""); return; }
    if (!state.team) { resume(); return; }
    loadTeam().then(route).catch(fail);
  }

  /** With a key from this tab's session: find its team again, then load. */
  function resume() {
    setLoading("Checking your key…");
    api("licence", state.key).then(function (licence) {
      state.team = licence.team;
      state.teamName = licence.team_name || licence.team;
      state.managesMembers = licence.manages_members === true;
      return enter();
    }).catch(fail);
  }

  function start() {
    $("signin-form").addEventListener("submit", onSignIn);
    // The skip link must not touch location.hash: the hash is the page's route.
    document.querySelector(".skip-link").addEventListener("click", function (event) {
      event.preventDefault();
      $("main").focus();
    });
    $("sign-out").addEventListener("click", function () { signOut(""); });
    $("member-issue").addEventListener("click", issueMember);
    $("readme-badge-switch").addEventListener("click", switchBadge);
    $("retry").addEventListener("click", reload);
    $("baseline-select").addEventListener("change", function (event) {
      state.baseline = event.target.value;
      state.branch = null;  // follow the baseline's own branch again
      renderHistory();
    });
    $("branch-select").addEventListener("change", function (event) {
      state.branch = event.target.value;
      renderHistory();
    });
    $("track-select").addEventListener("change", function (event) {
      state.track = knownTrack(event.target.value);
      window.history.replaceState(null, "", trackUrl(window.location.href, state.track));
      renderHistory();
    });
    $("compare-runs").addEventListener("click", function () {
      var picked = pickedRuns();
      if (picked.length === 2) {
        window.location.hash = "#/compare/" + encodeURIComponent(picked[0]) + "/" + encodeURIComponent(picked[1]);
      }
    });
    window.addEventListener("hashchange", function () {
      if (state.key && state.runs === null) { reload(); return; }
      var r = route();
      if (r && r.catch) { r.catch(fail); }
    });
    var key = readKey();
    if (!key) { showSignIn("", true); return; }
    state.key = key;
    resume();
  }

  // Pure helpers, exposed for the browser tests (no state, no DOM).
  window.TC300Dashboard = {
    apiUrl: apiUrl, baselineNames: baselineNames, scoredHistory: scoredHistory,
    metricSeries: metricSeries, categorySeries: categorySeries, categoriesOf: categoriesOf,
    chartPoints: chartPoints, categoryMoves: categoryMoves, assess: assess, formatTime: formatTime,
    failedCases: failedCases, caseHref: caseHref, branchOf: branchOf, branchNames: branchNames,
    compareCases: compareCases, trackOf: trackOf, exactText: exactText, figure: figure,
    figureText: figureText, trackMetrics: trackMetrics, trackFromUrl: trackFromUrl, trackUrl: trackUrl,
    CATEGORIES: CATEGORIES, METRICS: METRICS, TRACKS: TRACKS
  };

  if (document.readyState === "loading") {
    document.addEventListener("DOMContentLoaded", start);
  } else {
    start();
  }
}());
