// One model in the Models view: its aliases, its versions (metadata, metrics, a side-by-side
// metric comparison through the compare route), the lineage of the selected version as an SVG
// graph (lineageGraph.ts), its endpoints with their state and replicas (and, for admins, their
// keys: endpointKeys.ts), and the "try it" form (tryIt.ts).
// Every user value reaches the page as text (textContent) or escaped in the SVG.
// DOM hooks: .yt-model-detail[data-model], .yt-model-alias[data-alias],
// .yt-model-version[data-version] (.yt-model-version-select, .yt-selected), .yt-model-compare-button,
// .yt-model-compare (tr[data-metric] td[data-version]), .yt-model-lineage[data-version] svg
// (g[data-node]), .yt-endpoint[data-endpoint][data-state] (.yt-endpoint-replicas); the form's
// are in tryIt.ts, the keys' in endpointKeys.ts.
import { el } from './dom';
import { EndpointKeys } from './endpointKeys';
import { replicaSummary } from './endpointText';
import { graphSVG, lineageGraph } from './lineageGraph';
import { IEndpoint, IModel, IModelVersion, fetchComparison } from './modelsApi';
import { TryIt } from './tryIt';

const message = (error: unknown): string =>
  error instanceof Error ? error.message : String(error);

/** A metric value as shown: 4 significant digits, `-` when the version has none. */
export function metricText(value: unknown): string {
  if (typeof value !== 'number' || !isFinite(value)) {
    return value === null || value === undefined ? '-' : String(value);
  }
  return String(Number(value.toPrecision(4)));
}

const when = (iso: string): string => iso.slice(0, 16).replace('T', ' ');

function button(cls: string, label: string): HTMLButtonElement {
  const b = el('button', `${cls} jp-Button jp-mod-styled`, label) as HTMLButtonElement;
  b.type = 'button';
  return b;
}

function section(cls: string, title: string): [HTMLElement, HTMLElement] {
  const box = el('div', `yt-model-section ${cls}`);
  const body = el('div', 'yt-model-section-body');
  box.append(el('div', 'yt-title yt-section-title', title), body);
  return [box, body];
}

export class ModelDetail {
  readonly node = el('div', 'yt-model-detail');

  /** `admin`: the caller may issue and revoke endpoints' keys (the platform checks it again). */
  constructor(model: IModel, admin = false) {
    this.model = model;
    this._admin = admin;
    this.node.dataset.model = model.full_name;
    const [versionsBox, versionsBody] = section('yt-model-versions-box', 'Versions');
    const compare = button('yt-model-compare-button', 'Compare metrics');
    compare.title = 'The checked versions side by side (every version when none is checked)';
    compare.onclick = () => void this._compare();
    this._compareOut.hidden = true;
    versionsBody.append(this._versions, compare, this._compareOut);
    const [lineageBox] = section('yt-model-lineage-box', 'Lineage');
    lineageBox.append(this._lineage);
    const [endpointsBox, endpointsBody] = section('yt-model-endpoints-box', 'Deployments');
    endpointsBody.append(this._endpoints);
    const [tryBox, tryBody] = section('yt-tryit-box', 'Try it');
    tryBody.append(this._tryIt.node);
    this.node.append(this._head, versionsBox, lineageBox, endpointsBox, tryBox);
  }

  /** Show what the view fetched: the model, its versions (newest first), its endpoints. */
  update(model: IModel, versions: IModelVersion[], endpoints: IEndpoint[]): void {
    this.model = model;
    this._versionList = versions;
    this._endpointList = endpoints;
    this._showHead();
    this._showVersions();
    this._showLineage();
    this._showEndpoints();
  }

  private _showHead(): void {
    const m = this.model;
    const aliases = el('div', 'yt-model-aliases');
    const entries = Object.entries(m.aliases ?? {});
    aliases.append(
      ...(entries.length
        ? entries.map(([alias, v]) => {
            const chip = el('span', 'yt-model-alias', `${alias} → v${v}`);
            chip.dataset.alias = alias;
            return chip;
          })
        : [el('span', 'yt-empty', 'no aliases')])
    );
    this._head.replaceChildren(
      el('div', 'yt-model-title', m.full_name),
      el(
        'div',
        'yt-model-meta',
        `owner ${m.owner} · ${m.versions} version${m.versions === 1 ? '' : 's'}` +
          ` · files in dataset ${m.dataset}`
      ),
      ...(m.description ? [el('div', 'yt-vc-description', m.description)] : []),
      aliases
    );
  }

  private _showVersions(): void {
    const checked = new Set(
      Array.from(this._versions.querySelectorAll<HTMLInputElement>('.yt-model-version-select'))
        .filter(c => c.checked)
        .map(c => c.value)
    );
    if (!this._versionList.some(v => v.number === this._selected)) {
      this._selected = this._versionList[0]?.number ?? null;
    }
    const rows = this._versionList.map(v => {
      const row = el('div', 'yt-model-version');
      row.dataset.version = String(v.number);
      row.classList.toggle('yt-selected', v.number === this._selected);
      const select = el('input', 'yt-model-version-select') as HTMLInputElement;
      select.type = 'checkbox';
      select.value = String(v.number);
      select.checked = checked.has(select.value);
      select.title = 'Check versions to compare their metrics';
      select.onclick = event => event.stopPropagation();
      const metrics = Object.entries(v.metrics ?? {})
        .map(([k, value]) => `${k} ${metricText(value)}`)
        .join(' · ');
      const label = el('div', 'yt-model-version-label');
      const first = el('div', 'yt-model-version-line');
      first.append(
        el('span', 'yt-version-number', `v${v.number}`),
        ...v.aliases.map(a => el('span', 'yt-model-alias', a)),
        el('span', 'yt-model-version-kind', [v.framework, v.format].filter(Boolean).join(' / ')),
        el('span', 'yt-model-version-metrics', metrics)
      );
      label.append(
        first,
        el(
          'div',
          'yt-version-meta',
          `${v.author} · ${when(v.created)} · ${v.files} file${v.files === 1 ? '' : 's'}` +
            (v.message ? ` · ${v.message}` : '')
        )
      );
      row.append(select, label);
      row.title = 'Show its lineage';
      row.onclick = () => {
        this._selected = v.number;
        this._versions
          .querySelectorAll('.yt-model-version')
          .forEach(r => r.classList.toggle('yt-selected', r === row));
        this._showLineage();
      };
      return row;
    });
    this._versions.replaceChildren(
      ...(rows.length
        ? rows
        : [el('div', 'yt-empty', 'No versions yet: yt model register <vc>/<name> <folder>.')])
    );
  }

  private async _compare(): Promise<void> {
    const refs = Array.from(
      this._versions.querySelectorAll<HTMLInputElement>('.yt-model-version-select:checked')
    ).map(c => Number(c.value));
    this._compareOut.hidden = false;
    try {
      const cmp = await fetchComparison(this.model.full_name, refs);
      const table = el('table', 'yt-model-compare-table');
      const head = el('tr', '');
      head.append(el('th', '', 'metric'));
      const versions = cmp.versions as { number: number; aliases: string[]; metrics: object }[];
      for (const v of versions) {
        const th = el(
          'th',
          '',
          `v${v.number}` + (v.aliases?.length ? ` (${v.aliases.join(', ')})` : '')
        );
        th.dataset.version = String(v.number);
        head.append(th);
      }
      table.append(head);
      for (const name of cmp.metrics) {
        const tr = el('tr', '');
        tr.dataset.metric = name;
        tr.append(el('th', 'yt-model-compare-metric', name));
        for (const v of versions) {
          const td = el('td', '', metricText((v.metrics as Record<string, unknown>)[name]));
          td.dataset.version = String(v.number);
          tr.append(td);
        }
        table.append(tr);
      }
      this._compareOut.replaceChildren(
        cmp.metrics.length ? table : el('div', 'yt-empty', 'These versions have no metrics.')
      );
    } catch (error) {
      this._compareOut.replaceChildren(el('div', 'yt-error', message(error)));
    }
  }

  private _showLineage(): void {
    const v = this._versionList.find(x => x.number === this._selected);
    if (!v) {
      this._lineage.replaceChildren(el('div', 'yt-empty', 'No version selected.'));
      delete this._lineage.dataset.version;
      return;
    }
    const graph = lineageGraph(this.model.full_name, v.number, v.lineage ?? {});
    const doc = new DOMParser().parseFromString(graphSVG(graph), 'image/svg+xml');
    const svg = document.importNode(doc.documentElement, true);
    const wasOpen =
      this._lineage.dataset.version === String(v.number) &&
      !!this._lineage.querySelector<HTMLDetailsElement>('.yt-model-lineage-params')?.open;
    const facts: HTMLElement[] = [];
    const env = (v.lineage?.environment ?? {}) as Record<string, unknown>;
    const environment = [
      env.image,
      env.digest,
      env.python_version && `python ${env.python_version}`
    ]
      .filter(Boolean)
      .join(' · ');
    if (environment) {
      facts.push(el('div', 'yt-model-lineage-fact', `environment: ${environment}`));
    }
    const params = v.lineage?.parameters;
    if (params && typeof params === 'object' && Object.keys(params).length) {
      // the job's spec as its ledger record keeps it: folded, one field a line, long values cut
      const shown = Object.entries(params).filter(([, value]) => value !== null && value !== '');
      const details = el('details', 'yt-model-lineage-params') as HTMLDetailsElement;
      details.open = wasOpen; // a refresh keeps it as it was
      details.append(
        el('summary', '', `job parameters (${shown.length})`),
        el(
          'pre',
          '',
          shown
            .map(([k, value]) => {
              const t = typeof value === 'string' ? value : JSON.stringify(value);
              return `${k}: ${t.length > 200 ? `${t.slice(0, 199)}…` : t}`;
            })
            .join('\n')
        )
      );
      facts.push(details);
    }
    this._lineage.dataset.version = String(v.number);
    this._lineage.replaceChildren(
      el('div', 'yt-model-lineage-title', `v${v.number}`),
      svg,
      ...(graph.nodes.length === 1
        ? [el('div', 'yt-empty', 'Registered from files: no job, code or dataset recorded.')]
        : []),
      ...facts
    );
  }

  private _showEndpoints(): void {
    const rows = this._endpointList.map(e => {
      const row = el('div', 'yt-endpoint');
      row.dataset.endpoint = e.name;
      row.dataset.state = e.state;
      const state = el('span', `yt-endpoint-state yt-state-${e.state}`, e.state);
      const shares = Object.entries(e.traffic ?? {});
      const version =
        shares.length > 1 // a canary: every version with its share of the traffic
          ? shares.map(([v, percent]) => `${v} ${percent}%`).join(' · ')
          : `v${e.version}`;
      row.append(
        el('span', 'yt-endpoint-name', e.name),
        el('span', 'yt-endpoint-version', version),
        state,
        el('span', 'yt-endpoint-replicas', replicaSummary(e)),
        el('span', 'yt-endpoint-meta', `${e.owner} · since ${when(e.created)}`),
        ...(e.reason ? [el('span', 'yt-endpoint-reason', e.reason)] : [])
      );
      if (this._admin) {
        // the same control across refreshes, so an issued key's secret stays until dismissed
        let keys = this._keys.get(e.name);
        if (!keys) {
          keys = new EndpointKeys(e.name);
          this._keys.set(e.name, keys);
        }
        row.append(keys.node);
      }
      return row;
    });
    const names = new Set(this._endpointList.map(e => e.name));
    for (const name of [...this._keys.keys()].filter(n => !names.has(n))) {
      this._keys.delete(name);
    }
    this._endpoints.replaceChildren(
      ...(rows.length
        ? rows
        : [
            el(
              'div',
              'yt-empty',
              `Not deployed: yt deploy create <name> ${this.model.full_name}@<version> --profile <profile>.`
            )
          ])
    );
    this._tryIt.update(this._endpointList, this._versionList);
  }

  model: IModel;
  private _versionList: IModelVersion[] = [];
  private _endpointList: IEndpoint[] = [];
  private _selected: number | null = null;
  private _head = el('div', 'yt-model-head');
  private _versions = el('div', 'yt-model-versions');
  private _compareOut = el('div', 'yt-model-compare');
  private _lineage = el('div', 'yt-model-lineage');
  private _endpoints = el('div', 'yt-model-endpoints');
  private _tryIt = new TryIt();
  private _admin: boolean;
  private _keys = new Map<string, EndpointKeys>();
}
