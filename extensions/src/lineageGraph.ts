// A model version's lineage (what made it: the job and its run, the code snapshot, the dataset
// versions it read, or the version it was converted from) as a small left-to-right graph, and
// that graph as an SVG document. Pure functions, no DOM (tests/extensions/test_models_view.py);
// every text that reaches the SVG is escaped, since names and paths are users' values.

export type NodeKind = 'dataset' | 'code' | 'job' | 'source' | 'note' | 'model';

export interface IGraphNode {
  id: string;
  kind: NodeKind;
  /** the line shown (cut to fit the box) */
  label: string;
  /** the full text, shown as the node's tooltip */
  detail: string;
  column: number;
  row: number;
  x: number;
  y: number;
}

export interface IGraphEdge {
  from: string;
  to: string;
}

export interface ILineageGraph {
  nodes: IGraphNode[];
  edges: IGraphEdge[];
  width: number;
  height: number;
}

export const NODE_W = 190;
export const NODE_H = 34;
export const GAP_X = 56;
export const GAP_Y = 10;
export const PAD = 6;
/** Labels longer than this are cut with an ellipsis (the tooltip has the whole text). */
export const LABEL_MAX = 28;
/** At most this many dataset nodes; the rest are counted in one more node. */
export const MAX_DATASETS = 8;

const record = (value: unknown): Record<string, unknown> =>
  value !== null && typeof value === 'object' && !Array.isArray(value)
    ? (value as Record<string, unknown>)
    : {};

const text = (value: unknown): string =>
  value === null || value === undefined ? '' : typeof value === 'string' ? value : String(value);

/** `abc…` when longer than `max` characters. */
export function cut(value: string, max = LABEL_MAX): string {
  return value.length > max ? `${value.slice(0, max - 1)}…` : value;
}

/** The graph of `model` version `version` from its `lineage` (the registry's `lineage` field):
 * column 0 the inputs (dataset versions, code), column 1 the job (or the source version of a
 * conversion), column 2 the model version. A version without lineage is one node. */
export function lineageGraph(
  model: string,
  version: number,
  lineage: Record<string, unknown>
): ILineageGraph {
  const columns: Omit<IGraphNode, 'column' | 'row' | 'x' | 'y'>[][] = [[], [], []];
  const edges: IGraphEdge[] = [];
  const target = 'model';
  columns[2].push({
    id: target,
    kind: 'model',
    label: `${model} v${version}`,
    detail: `model ${model} version ${version}`
  });

  const job = lineage.job;
  let middle: string | null = null;
  if (typeof job === 'number' || (typeof job === 'string' && job)) {
    const run = lineage.run;
    const path = text(lineage.path);
    middle = 'job';
    columns[1].push({
      id: middle,
      kind: 'job',
      label: `job ${text(job)}` + (run !== null && run !== undefined ? ` · run ${text(run)}` : ''),
      detail:
        `job ${text(job)}` +
        (run !== null && run !== undefined ? `, run ${text(run)}` : '') +
        (lineage.attempt !== null && lineage.attempt !== undefined
          ? `, attempt ${text(lineage.attempt)}`
          : '') +
        (path ? `, outputs path ${path}` : '')
    });
    edges.push({ from: middle, to: target });
  }
  const source = text(lineage.converted_from);
  if (source) {
    columns[1].push({
      id: 'source',
      kind: 'source',
      label: `from ${source}`,
      detail: `converted from ${source}`
    });
    edges.push({ from: 'source', to: target });
  }
  const from = text(lineage.registered_from);
  if (from && !middle && !source) {
    columns[1].push({
      id: 'note',
      kind: 'note',
      label: `from a ${from}`,
      detail: `registered from a ${from}`
    });
    edges.push({ from: 'note', to: target });
  }

  const into = middle ?? target;
  const datasets = Array.isArray(lineage.datasets) ? lineage.datasets.map(record) : [];
  datasets.slice(0, MAX_DATASETS).forEach((d, i) => {
    // the ledger names the input as the job did (`vc/name@3`, or `vc/name`) and its version
    const name = text(d.dataset).split('@')[0] || '(a dataset)';
    const v = d.version !== null && d.version !== undefined ? `@${text(d.version)}` : '';
    const manifest = text(d.manifest);
    const id = `dataset-${i}`;
    columns[0].push({
      id,
      kind: 'dataset',
      label: `${name}${v}`,
      detail: `dataset ${name}${v}` + (manifest ? `, manifest ${manifest}` : '')
    });
    edges.push({ from: id, to: into });
  });
  if (datasets.length > MAX_DATASETS) {
    const more = datasets.length - MAX_DATASETS;
    columns[0].push({
      id: 'dataset-more',
      kind: 'dataset',
      label: `${more} more dataset${more === 1 ? '' : 's'}`,
      detail: datasets
        .slice(MAX_DATASETS)
        .map(d => text(d.dataset))
        .join(', ')
    });
    edges.push({ from: 'dataset-more', to: into });
  }
  const code = record(lineage.code);
  const commit = text(code.commit);
  const codePath = text(code.path);
  if (commit || codePath) {
    const dirty = text(code.dirty_hash);
    columns[0].push({
      id: 'code',
      kind: 'code',
      label: commit ? `code ${commit.slice(0, 10)}${dirty ? ' +changes' : ''}` : `code ${codePath}`,
      detail:
        (commit ? `code commit ${commit}` : 'code') +
        (dirty ? `, uncommitted changes ${dirty}` : '') +
        (codePath ? `, in ${codePath}` : '')
    });
    edges.push({ from: 'code', to: into });
  }

  // lay out: the used columns left to right, each centred on the tallest
  const used = columns.filter(c => c.length);
  const rows = Math.max(...used.map(c => c.length));
  const height = PAD * 2 + rows * NODE_H + (rows - 1) * GAP_Y;
  const nodes: IGraphNode[] = [];
  used.forEach((column, c) => {
    const own = column.length * NODE_H + (column.length - 1) * GAP_Y;
    const top = PAD + (height - PAD * 2 - own) / 2;
    column.forEach((n, r) => {
      nodes.push({
        ...n,
        label: cut(n.label),
        column: c,
        row: r,
        x: PAD + c * (NODE_W + GAP_X),
        y: top + r * (NODE_H + GAP_Y)
      });
    });
  });
  const width = PAD * 2 + used.length * NODE_W + (used.length - 1) * GAP_X;
  return { nodes, edges, width, height };
}

/** `&`, `<`, `>`, `"`, `'` as entities (text and attribute values of the SVG). */
export function escapeXML(value: string): string {
  return value.replace(
    /[&<>"']/g,
    c => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' })[c] as string
  );
}

const num = (v: number): string => String(Math.round(v * 10) / 10);

/** The graph as an SVG document: a box per node (class `yt-lineage-node yt-lineage-<kind>`,
 * `data-node` its id, a `<title>` with the full text) and a curved arrow per edge. */
export function graphSVG(g: ILineageGraph): string {
  const byId = new Map(g.nodes.map(n => [n.id, n]));
  const edges = g.edges
    .map(e => {
      const a = byId.get(e.from);
      const b = byId.get(e.to);
      if (!a || !b) {
        return '';
      }
      const x1 = a.x + NODE_W;
      const y1 = a.y + NODE_H / 2;
      const x2 = b.x;
      const y2 = b.y + NODE_H / 2;
      const mid = (x1 + x2) / 2;
      return (
        `<path class="yt-lineage-edge" data-from="${escapeXML(e.from)}" data-to="${escapeXML(e.to)}" ` +
        `d="M${num(x1)},${num(y1)} C${num(mid)},${num(y1)} ${num(mid)},${num(y2)} ${num(x2 - 2)},${num(y2)}" ` +
        'fill="none" marker-end="url(#yt-lineage-arrow)"/>'
      );
    })
    .join('');
  const nodes = g.nodes
    .map(
      n =>
        `<g class="yt-lineage-node yt-lineage-${n.kind}" data-node="${escapeXML(n.id)}">` +
        `<title>${escapeXML(n.detail)}</title>` +
        `<rect x="${num(n.x)}" y="${num(n.y)}" width="${NODE_W}" height="${NODE_H}" rx="5"/>` +
        `<text x="${num(n.x + 10)}" y="${num(n.y + NODE_H / 2)}" dominant-baseline="central">` +
        `${escapeXML(n.label)}</text></g>`
    )
    .join('');
  return (
    `<svg xmlns="http://www.w3.org/2000/svg" class="yt-lineage-svg" width="${num(g.width)}" ` +
    `height="${num(g.height)}" viewBox="0 0 ${num(g.width)} ${num(g.height)}" role="img">` +
    '<defs><marker id="yt-lineage-arrow" viewBox="0 0 10 10" refX="9" refY="5" ' +
    'markerWidth="7" markerHeight="7" orient="auto-start-reverse">' +
    '<path d="M0,0 L10,5 L0,10 z" class="yt-lineage-arrowhead"/></marker></defs>' +
    edges +
    nodes +
    '</svg>'
  );
}
