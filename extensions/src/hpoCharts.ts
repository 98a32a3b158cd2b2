// The Experiments view's pure builders (no DOM, no JupyterLab: node runs them in
// tests/extensions/test_hpo_charts.py): trial parameters flattened, the trials table's sort and
// durations, and the four charts as plain SVG trees (`SvgNode`) that the view turns into DOM
// nodes (experiments.ts) and the tests into text (`svgText`, every value escaped).
// Charts: best-so-far (a dot per complete trial, a step line for the best), intermediate results
// (a line per trial; pruned trials dashed and marked with a cross at the step they stopped),
// parallel coordinates (an axis per parameter and one for the objective, a line per complete
// trial coloured by its value), parameter importance (bars, largest first).

/** An SVG element as plain data: `tag`, attributes, children, and text (escaped when written). */
export interface SvgNode {
  tag: string;
  attrs: Record<string, string | number>;
  children?: SvgNode[];
  text?: string;
}

/** A trial as `GET /experiments/{id}` answers it (the fields the view reads). */
export interface ITrialRow {
  number: number;
  job_id?: number | null;
  state: string;
  reason?: string;
  params: Record<string, unknown>;
  intermediate: number[];
  intermediate_steps?: number[];
  steps?: number;
  value: number | null;
  created?: string | null;
  /** When its job started running (a `waiting` trial's job is still queued: none yet). */
  started?: string | null;
  finished?: string | null;
}

export type Direction = 'maximize' | 'minimize';

export interface ISize {
  width: number;
  height: number;
}

export const SIZE: ISize = { width: 520, height: 240 };
const M = { left: 56, right: 16, top: 14, bottom: 30 };

const XML_ESCAPES: Record<string, string> = {
  '&': '&amp;',
  '<': '&lt;',
  '>': '&gt;',
  '"': '&quot;',
  "'": '&#39;'
};

export function escapeXml(value: string): string {
  return value.replace(/[&<>"']/g, c => XML_ESCAPES[c]);
}

/** The tree as SVG text (for tests and snapshots; the view builds DOM nodes instead). */
export function svgText(node: SvgNode): string {
  const attrs = Object.keys(node.attrs)
    .map(k => ` ${k}="${escapeXml(String(node.attrs[k]))}"`)
    .join('');
  const inner =
    (node.text !== undefined ? escapeXml(node.text) : '') +
    (node.children ?? []).map(svgText).join('');
  return `<${node.tag}${attrs}>${inner}</${node.tag}>`;
}

function n(tag: string, attrs: Record<string, string | number>, children?: SvgNode[]): SvgNode {
  return children ? { tag, attrs, children } : { tag, attrs };
}

function t(text: string, attrs: Record<string, string | number>): SvgNode {
  return { tag: 'text', attrs, text };
}

function title(text: string): SvgNode {
  return { tag: 'title', attrs: {}, text };
}

/** A short number: 4 significant digits, no trailing zeros (`0.1235`, `1.2e+5`). */
export function fmt(value: number | null | undefined): string {
  if (value === null || value === undefined || !isFinite(value)) {
    return '-';
  }
  if (value === 0) {
    return '0';
  }
  const abs = Math.abs(value);
  if (abs >= 1e5 || abs < 1e-3) {
    return value.toExponential(2).replace(/\.?0+e/, 'e');
  }
  return String(Number(value.toPrecision(4)));
}

const round = (v: number) => Math.round(v * 100) / 100;

/** `[min, max]` of the finite values, widened when they are equal; `[0, 1]` for none. */
export function extent(values: number[]): [number, number] {
  let lo = Infinity;
  let hi = -Infinity;
  for (const v of values) {
    if (isFinite(v)) {
      lo = Math.min(lo, v);
      hi = Math.max(hi, v);
    }
  }
  if (lo > hi) {
    return [0, 1];
  }
  if (lo === hi) {
    const pad = Math.abs(lo) > 0 ? Math.abs(lo) * 0.1 : 1;
    return [lo - pad, hi + pad];
  }
  return [lo, hi];
}

/** `[lo, hi]` widened by `fraction` of its span on each side (dots off the frame's edge). */
export function padded([lo, hi]: [number, number], fraction = 0.05): [number, number] {
  const pad = (hi - lo) * fraction;
  return [lo - pad, hi + pad];
}

/** A linear map from `domain` onto `range`. */
export function linear(domain: [number, number], range: [number, number]): (v: number) => number {
  const [d0, d1] = domain;
  const [r0, r1] = range;
  const k = d1 === d0 ? 0 : (r1 - r0) / (d1 - d0);
  return v => round(r0 + (v - d0) * k);
}

/** About `count` round tick values inside `[lo, hi]` (steps of 1, 2 or 5 times a power of 10). */
export function ticks(lo: number, hi: number, count = 5): number[] {
  if (!(hi > lo) || !isFinite(lo) || !isFinite(hi)) {
    return [lo];
  }
  const raw = (hi - lo) / Math.max(1, count);
  const power = Math.pow(10, Math.floor(Math.log10(raw)));
  const err = raw / power; // in [1, 10): round to the nearest of 1, 2, 5, 10 (geometrically)
  const step =
    power * (err >= Math.sqrt(50) ? 10 : err >= Math.sqrt(10) ? 5 : err >= Math.SQRT2 ? 2 : 1);
  const out: number[] = [];
  for (let v = Math.ceil(lo / step) * step; v <= hi + step * 1e-9; v += step) {
    out.push(Number(v.toPrecision(12)));
  }
  return out;
}

/**
 * NNI's parameters flattened for columns and axes: a nested choice (`{"_name": "sgd", "lr": 0.1}`
 * under `optimizer`) becomes `optimizer` = `sgd` and `optimizer/lr` = 0.1; other objects and
 * lists become their JSON.
 */
export function flatParams(
  params: Record<string, unknown>,
  prefix = ''
): Record<string, number | string> {
  const out: Record<string, number | string> = {};
  for (const key of Object.keys(params)) {
    const value = params[key];
    const name = prefix + key;
    if (value && typeof value === 'object' && !Array.isArray(value) && '_name' in value) {
      const nested = value as Record<string, unknown>;
      out[name] = String(nested._name);
      const rest: Record<string, unknown> = {};
      for (const k of Object.keys(nested)) {
        if (k !== '_name') {
          rest[k] = nested[k];
        }
      }
      Object.assign(out, flatParams(rest, `${name}/`));
    } else if (typeof value === 'number' || typeof value === 'string') {
      out[name] = value;
    } else {
      out[name] = JSON.stringify(value ?? null);
    }
  }
  return out;
}

/** Every flattened parameter name of the trials, in first-seen order. */
export function paramNames(trials: ITrialRow[]): string[] {
  const seen: string[] = [];
  for (const trial of trials) {
    for (const key of Object.keys(flatParams(trial.params))) {
      if (!seen.includes(key)) {
        seen.push(key);
      }
    }
  }
  return seen;
}

function time(value: string | null | undefined): number {
  if (!value) {
    return NaN;
  }
  return Date.parse(/[zZ]|[+-]\d\d:?\d\d$/.test(value) ? value : `${value}Z`);
}

/**
 * Seconds from the start of the trial's job to its end (or to `now` while it runs); null if
 * unknown or not started (`waiting`: the time in the queue is not the trial's). An answer
 * without `started` (an older service) counts from the trial's creation.
 */
export function durationSeconds(trial: ITrialRow, now: number): number | null {
  if (trial.state === 'waiting' || trial.started === null) {
    return null;
  }
  const start = time(trial.started ?? trial.created);
  const end = trial.finished ? time(trial.finished) : now;
  if (isNaN(start) || isNaN(end)) {
    return null;
  }
  return Math.max(0, (end - start) / 1000);
}

/** `42s`, `3m 05s`, `2h 01m`. */
export function durationText(seconds: number | null): string {
  if (seconds === null) {
    return '-';
  }
  const s = Math.round(seconds);
  if (s < 60) {
    return `${s}s`;
  }
  if (s < 3600) {
    return `${Math.floor(s / 60)}m ${String(s % 60).padStart(2, '0')}s`;
  }
  return `${Math.floor(s / 3600)}h ${String(Math.floor((s % 3600) / 60)).padStart(2, '0')}m`;
}

/** A column of the trials table: `number`, `state`, `value`, `duration` or `param:<name>`. */
export type SortKey = string;

/**
 * The trials sorted by `key` (a copy); empty cells (no value, a parameter the trial lacks) go
 * last either way; ties keep trial-number order.
 */
export function sortTrials(
  trials: ITrialRow[],
  key: SortKey,
  ascending: boolean,
  now: number
): ITrialRow[] {
  const cell = (trial: ITrialRow): number | string | null => {
    if (key === 'number') {
      return trial.number;
    }
    if (key === 'state') {
      return trial.state;
    }
    if (key === 'value') {
      return trial.value;
    }
    if (key === 'duration') {
      return durationSeconds(trial, now);
    }
    if (key.startsWith('param:')) {
      const value = flatParams(trial.params)[key.slice(6)];
      return value === undefined ? null : value;
    }
    return null;
  };
  const sign = ascending ? 1 : -1;
  return trials
    .map(trial => ({ trial, v: cell(trial) }))
    .sort((a, b) => {
      if (a.v === null || b.v === null) {
        return a.v === b.v ? a.trial.number - b.trial.number : a.v === null ? 1 : -1;
      }
      let c = 0;
      if (typeof a.v === 'number' && typeof b.v === 'number') {
        c = a.v - b.v;
      } else {
        c = String(a.v).localeCompare(String(b.v));
      }
      return c !== 0 ? sign * c : a.trial.number - b.trial.number;
    })
    .map(x => x.trial);
}

function frame(kind: string, size: ISize, label: string, children: SvgNode[]): SvgNode {
  return n(
    'svg',
    {
      class: `yt-chart yt-chart-${kind}`,
      viewBox: `0 0 ${size.width} ${size.height}`,
      width: size.width,
      height: size.height,
      role: 'img',
      'aria-label': label
    },
    [title(label), ...children]
  );
}

function empty(kind: string, size: ISize, label: string, message: string): SvgNode {
  return frame(kind, size, label, [
    t(message, {
      class: 'yt-chart-empty',
      x: size.width / 2,
      y: size.height / 2,
      'text-anchor': 'middle'
    })
  ]);
}

/** Left and bottom axes with ticks and labels. */
function axes(
  size: ISize,
  x: [number, number],
  y: [number, number],
  xLabel: string,
  yLabel: string,
  integerX: boolean
): SvgNode {
  const sx = linear(x, [M.left, size.width - M.right]);
  const sy = linear(y, [size.height - M.bottom, M.top]);
  const bottom = size.height - M.bottom;
  const parts: SvgNode[] = [
    n('line', { class: 'yt-axis', x1: M.left, y1: bottom, x2: size.width - M.right, y2: bottom }),
    n('line', { class: 'yt-axis', x1: M.left, y1: M.top, x2: M.left, y2: bottom })
  ];
  const xs = ticks(x[0], x[1], 6).filter(v => !integerX || Number.isInteger(v));
  for (const v of xs) {
    parts.push(
      n('line', { class: 'yt-tick', x1: sx(v), y1: bottom, x2: sx(v), y2: bottom + 4 }),
      t(fmt(v), { class: 'yt-tick-label', x: sx(v), y: bottom + 15, 'text-anchor': 'middle' })
    );
  }
  for (const v of ticks(y[0], y[1], 4)) {
    parts.push(
      n('line', { class: 'yt-grid', x1: M.left, y1: sy(v), x2: size.width - M.right, y2: sy(v) }),
      t(fmt(v), { class: 'yt-tick-label', x: M.left - 6, y: sy(v) + 4, 'text-anchor': 'end' })
    );
  }
  parts.push(
    t(xLabel, {
      class: 'yt-axis-label',
      x: size.width - M.right,
      y: size.height - 2,
      'text-anchor': 'end'
    }),
    t(yLabel, { class: 'yt-axis-label', x: 4, y: M.top - 3 })
  );
  return n('g', { class: 'yt-axes' }, parts);
}

/**
 * Best so far: a dot per complete trial at (trial number, value) and a step line through the
 * best value reached after each trial (`bestSoFar`, the service's curve, one entry per trial).
 */
export function bestSoFarChart(
  trials: ITrialRow[],
  bestSoFar: (number | null)[],
  metric: string,
  direction: Direction,
  size: ISize = SIZE
): SvgNode {
  const label = `Best ${metric} so far (${direction})`;
  const done = trials.filter(tr => tr.state === 'complete' && tr.value !== null);
  if (!done.length) {
    return empty('best', size, label, 'No complete trial yet.');
  }
  const ys = extent(done.map(tr => tr.value as number));
  const xs: [number, number] = [
    0,
    Math.max(1, bestSoFar.length - 1, ...trials.map(tr => tr.number))
  ];
  const sx = linear(xs, [M.left, size.width - M.right]);
  const sy = linear(ys, [size.height - M.bottom, M.top]);
  const dots = done.map(tr =>
    n(
      'circle',
      {
        class: 'yt-dot',
        cx: sx(tr.number),
        cy: sy(tr.value as number),
        r: 3,
        'data-trial': tr.number
      },
      [title(`trial ${tr.number}: ${fmt(tr.value)}`)]
    )
  );
  let d = '';
  let last: number | null = null;
  bestSoFar.forEach((v, i) => {
    if (v === null) {
      return;
    }
    d += last === null ? `M${sx(i)},${sy(v)}` : `H${sx(i)}V${sy(v)}`;
    last = v;
  });
  if (last !== null) {
    d += `H${sx(xs[1])}`;
  }
  return frame('best', size, label, [
    axes(size, xs, ys, 'trial', metric, true),
    n('path', { class: 'yt-best-line', d }),
    n('g', { class: 'yt-dots' }, dots)
  ]);
}

/**
 * Intermediate results: a line per trial over its reported steps (thinned curves use their
 * `intermediate_steps`); pruned trials are dashed and end in a cross (`yt-pruned-mark`). At most
 * `maxTrials` lines: the highest trial numbers.
 */
export function curvesChart(
  trials: ITrialRow[],
  metric: string,
  size: ISize = SIZE,
  maxTrials = 200
): SvgNode {
  const label = `Intermediate ${metric} per trial`;
  const shown = trials
    .filter(tr => tr.intermediate.length > 0)
    .sort((a, b) => a.number - b.number)
    .slice(-maxTrials);
  if (!shown.length) {
    return empty('curves', size, label, 'No intermediate result reported yet.');
  }
  const stepsOf = (tr: ITrialRow) => tr.intermediate_steps ?? tr.intermediate.map((_, i) => i);
  let maxStep = 1;
  const all: number[] = [];
  for (const tr of shown) {
    const steps = stepsOf(tr);
    maxStep = Math.max(maxStep, steps[steps.length - 1]);
    all.push(...tr.intermediate);
  }
  const ys = padded(extent(all));
  const xs: [number, number] = [0, maxStep];
  const sx = linear(xs, [M.left, size.width - M.right]);
  const sy = linear(ys, [size.height - M.bottom, M.top]);
  const lines = shown.map(tr => {
    const steps = stepsOf(tr);
    const points = tr.intermediate.map((v, i) => `${sx(steps[i])},${sy(v)}`);
    const kids: SvgNode[] = [
      title(`trial ${tr.number} (${tr.state}): ${tr.intermediate.length} steps`),
      n(points.length > 1 ? 'polyline' : 'circle', {
        class: 'yt-curve-line',
        ...(points.length > 1
          ? { points: points.join(' ') }
          : { cx: sx(steps[0]), cy: sy(tr.intermediate[0]), r: 2 })
      })
    ];
    if (tr.state === 'pruned') {
      const lx = sx(steps[steps.length - 1]);
      const ly = sy(tr.intermediate[tr.intermediate.length - 1]);
      kids.push(
        n('path', {
          class: 'yt-pruned-mark',
          d: `M${lx - 4},${ly - 4}L${lx + 4},${ly + 4}M${lx - 4},${ly + 4}L${lx + 4},${ly - 4}`
        })
      );
    }
    return n(
      'g',
      { class: `yt-curve yt-curve-${tr.state}`, 'data-trial': tr.number, 'data-state': tr.state },
      kids
    );
  });
  return frame('curves', size, label, [
    axes(size, xs, ys, 'step', metric, true),
    n('g', { class: 'yt-curves' }, lines)
  ]);
}

/** A colour from worst (0) to best (1) along a blue-to-orange ramp. */
export function ramp(fraction: number): string {
  const f = Math.min(1, Math.max(0, isFinite(fraction) ? fraction : 0));
  return `hsl(${Math.round(220 - 190 * f)}, 70%, ${Math.round(45 + 5 * f)}%)`;
}

/**
 * Parallel coordinates: one vertical axis per parameter (numbers on a linear scale, anything
 * else as evenly spaced categories) and a last one for the objective; a line per complete trial,
 * coloured from worst to best. `names` picks the parameter axes (at most `maxAxes`).
 */
export function parallelChart(
  trials: ITrialRow[],
  names: string[],
  metric: string,
  direction: Direction,
  size: ISize = SIZE,
  maxAxes = 12
): SvgNode {
  const label = `Parameters and ${metric} of complete trials`;
  const done = trials.filter(tr => tr.state === 'complete' && tr.value !== null);
  const axesNames = names.slice(0, maxAxes);
  if (!done.length || !axesNames.length) {
    return empty('parallel', size, label, 'No complete trial yet.');
  }
  const flat = done.map(tr => flatParams(tr.params));
  const top = M.top + 10;
  const bottom = size.height - M.bottom;
  const count = axesNames.length + 1;
  const ax = (i: number) =>
    round(M.left / 2 + (i * (size.width - M.left / 2 - M.right * 2)) / Math.max(1, count - 1));
  type Scale = { at: (v: number | string | undefined) => number | null; labels: SvgNode[] };
  const scales: Scale[] = axesNames.map((name, i) => {
    const values = flat.map(f => f[name]);
    const numeric = values.every(v => v === undefined || typeof v === 'number');
    if (numeric) {
      const [lo, hi] = extent(values.filter((v): v is number => typeof v === 'number'));
      const s = linear([lo, hi], [bottom, top]);
      return {
        at: v => (typeof v === 'number' ? s(v) : null),
        labels: [
          t(fmt(hi), { class: 'yt-tick-label', x: ax(i) + 3, y: top - 2 }),
          t(fmt(lo), { class: 'yt-tick-label', x: ax(i) + 3, y: bottom + 11 })
        ]
      };
    }
    const cats = values
      .filter((v): v is number | string => v !== undefined)
      .map(String)
      .filter((v, j, all) => all.indexOf(v) === j)
      .sort();
    const s = linear([0, Math.max(1, cats.length - 1)], [bottom, top]);
    const pos = (v: string) => (cats.length === 1 ? round((top + bottom) / 2) : s(cats.indexOf(v)));
    return {
      at: v => (v === undefined ? null : pos(String(v))),
      labels: cats
        .slice(0, 8)
        .map(c => t(c.slice(0, 16), { class: 'yt-tick-label', x: ax(i) + 3, y: pos(c) + 3 }))
    };
  });
  const vs = extent(done.map(tr => tr.value as number));
  const sv = linear(vs, [bottom, top]);
  const better = (v: number) =>
    vs[1] === vs[0]
      ? 1
      : direction === 'maximize'
        ? (v - vs[0]) / (vs[1] - vs[0])
        : (vs[1] - v) / (vs[1] - vs[0]);
  const lines = done.map((tr, j) => {
    const pts: string[] = [];
    scales.forEach((s, i) => {
      const y = s.at(flat[j][axesNames[i]]);
      if (y !== null) {
        pts.push(`${ax(i)},${y}`);
      }
    });
    pts.push(`${ax(count - 1)},${sv(tr.value as number)}`);
    return n(
      'polyline',
      {
        class: 'yt-parallel-line',
        points: pts.join(' '),
        stroke: ramp(better(tr.value as number)),
        'data-trial': tr.number
      },
      [title(`trial ${tr.number}: ${metric} ${fmt(tr.value)}`)]
    );
  });
  const axisNodes: SvgNode[] = [];
  [...axesNames, metric].forEach((name, i) => {
    axisNodes.push(
      n('line', { class: 'yt-axis', x1: ax(i), y1: top, x2: ax(i), y2: bottom }),
      t(name.length > 18 ? `${name.slice(0, 17)}…` : name, {
        class: 'yt-axis-label yt-parallel-name',
        x: ax(i),
        y: size.height - 4,
        'text-anchor': i === 0 ? 'start' : i === count - 1 ? 'end' : 'middle'
      })
    );
  });
  scales.forEach(s => axisNodes.push(...s.labels));
  axisNodes.push(
    t(fmt(vs[1]), {
      class: 'yt-tick-label',
      x: ax(count - 1) - 3,
      y: top - 2,
      'text-anchor': 'end'
    }),
    t(fmt(vs[0]), {
      class: 'yt-tick-label',
      x: ax(count - 1) - 3,
      y: bottom + 11,
      'text-anchor': 'end'
    })
  );
  return frame('parallel', size, label, [
    n('g', { class: 'yt-parallel-lines' }, lines),
    n('g', { class: 'yt-parallel-axes' }, axisNodes)
  ]);
}

/** Parameter importance (fractions that sum to 1): a bar per parameter, largest first. */
export function importanceChart(
  importance: Record<string, number>,
  size: ISize = { width: SIZE.width, height: 0 }
): SvgNode {
  const label = 'Parameter importance (fANOVA)';
  const entries = Object.keys(importance)
    .map(k => [k, importance[k]] as [string, number])
    .filter(([, v]) => isFinite(v))
    .sort((a, b) => b[1] - a[1] || a[0].localeCompare(b[0]));
  const rowH = 22;
  const height = size.height || Math.max(60, entries.length * rowH + 16);
  const box = { width: size.width, height };
  if (!entries.length) {
    return empty('importance', box, label, 'Importance needs two complete trials.');
  }
  const labelW = 140;
  const max = Math.max(...entries.map(([, v]) => v), 1e-12);
  const s = linear([0, max], [labelW, size.width - 60]);
  const bars = entries.map(([name, v], i) => {
    const y = 8 + i * rowH;
    return n('g', { class: 'yt-importance-row', 'data-param': name }, [
      title(`${name}: ${fmt(v)}`),
      t(name.length > 20 ? `${name.slice(0, 19)}…` : name, {
        class: 'yt-axis-label',
        x: labelW - 6,
        y: y + 13,
        'text-anchor': 'end'
      }),
      n('rect', {
        class: 'yt-importance-bar',
        x: labelW,
        y,
        width: Math.max(1, round(s(v) - labelW)),
        height: rowH - 6
      }),
      t(fmt(v), { class: 'yt-tick-label', x: s(v) + 4, y: y + 13 })
    ]);
  });
  return frame('importance', box, label, bars);
}
