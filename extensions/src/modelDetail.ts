// One model in the Models view: its aliases, its versions (metadata, metrics, a side-by-side
// metric comparison through the compare route), the lineage of the selected version as an SVG
// graph (lineageGraph.ts), its endpoints with their state, and a "try it" form that sends an
// Open Inference Protocol request through the platform's endpoint route (inferRequest.ts).
// Every user value reaches the page as text (textContent) or escaped in the SVG.
// DOM hooks: .yt-model-detail[data-model], .yt-model-alias[data-alias],
// .yt-model-version[data-version] (.yt-model-version-select, .yt-selected), .yt-model-compare-button,
// .yt-model-compare (tr[data-metric] td[data-version]), .yt-model-lineage[data-version] svg
// (g[data-node]), .yt-endpoint[data-endpoint][data-state], .yt-tryit (.yt-tryit-endpoint,
// .yt-tryit-request, .yt-tryit-send, .yt-tryit-example, .yt-tryit-response[data-state]).
import { el } from './dom';
import { exampleRequest, parseInferRequest, responseLines, signatureInputs } from './inferRequest';
import { graphSVG, lineageGraph } from './lineageGraph';
import { IEndpoint, IModel, IModelVersion, fetchComparison, infer } from './modelsApi';

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

  constructor(model: IModel) {
    this.model = model;
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
    tryBody.append(this._tryForm());
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
      row.append(
        el('span', 'yt-endpoint-name', e.name),
        el('span', 'yt-endpoint-version', `v${e.version}`),
        state,
        el('span', 'yt-endpoint-meta', `${e.owner} · since ${when(e.created)}`),
        ...(e.reason ? [el('span', 'yt-endpoint-reason', e.reason)] : [])
      );
      return row;
    });
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
    // the try-it choice: the model's endpoints, keeping the one picked
    const picked = this._target.value;
    this._target.replaceChildren(
      ...this._endpointList.map(e => {
        const option = el(
          'option',
          '',
          `${e.name} (v${e.version}, ${e.state})`
        ) as HTMLOptionElement;
        option.value = e.name;
        return option;
      })
    );
    if (this._endpointList.some(e => e.name === picked)) {
      this._target.value = picked;
    }
    this._send.disabled = !this._endpointList.length;
    if (
      !this._request.value.trim() ||
      (this._request.dataset.example === 'yes' && picked !== this._target.value)
    ) {
      this._fillExample();
    }
  }

  private _signature(): Record<string, unknown> {
    const e = this._endpointList.find(x => x.name === this._target.value);
    const v = e && this._versionList.find(x => x.number === e.version);
    return (v?.signature as Record<string, unknown>) ?? {};
  }

  private _fillExample(): void {
    if (!this._endpointList.length) {
      return;
    }
    const signature = this._signature();
    this._request.value = exampleRequest(signature);
    this._request.dataset.example = 'yes';
    const one = signatureInputs(signature).length === 1;
    this._hint.textContent =
      'A V2 infer request' + (one ? ', or the rows of its one input as a JSON array.' : '.');
  }

  private _tryForm(): HTMLElement {
    const form = el('form', 'yt-tryit') as HTMLFormElement;
    this._target.onchange = () => this._fillExample();
    this._request.spellcheck = false;
    this._request.rows = 6;
    this._request.oninput = () => (this._request.dataset.example = 'no');
    this._send.type = 'submit';
    const example = button('yt-tryit-example', 'Example');
    example.title = 'An example request from the version’s signature';
    example.onclick = () => this._fillExample();
    this._answer.hidden = true;
    form.onsubmit = async event => {
      event.preventDefault();
      const e = this._endpointList.find(x => x.name === this._target.value);
      if (!e) {
        return;
      }
      const request = parseInferRequest(this._request.value, this._signature());
      this._answer.hidden = false;
      if (request instanceof Error) {
        this._showAnswer('error', [request.message], null);
        return;
      }
      this._send.disabled = true;
      this._answer.dataset.state = 'running';
      const started = performance.now();
      try {
        const answer = await infer(e, request);
        const ms = Math.round(performance.now() - started);
        this._showAnswer('ok', [...responseLines(answer), `(${ms} ms)`], answer);
      } catch (error) {
        this._showAnswer('error', [message(error)], null);
      } finally {
        this._send.disabled = false;
      }
    };
    const buttons = el('div', 'yt-tryit-buttons');
    buttons.append(this._send, example);
    form.append(this._target, this._hint, this._request, buttons, this._answer);
    return form;
  }

  private _showAnswer(state: 'ok' | 'error', lines: string[], raw: unknown): void {
    this._answer.dataset.state = state;
    const parts: HTMLElement[] = [
      el('pre', `yt-tryit-lines${state === 'error' ? ' yt-error' : ''}`, lines.join('\n'))
    ];
    if (raw !== null) {
      const details = el('details', 'yt-tryit-raw');
      details.append(el('summary', '', 'Raw answer'), el('pre', '', JSON.stringify(raw, null, 2)));
      parts.push(details);
    }
    this._answer.replaceChildren(...parts);
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
  private _target = el('select', 'yt-tryit-endpoint jp-mod-styled') as HTMLSelectElement;
  private _hint = el('div', 'yt-tryit-hint');
  private _request = el('textarea', 'yt-tryit-request jp-mod-styled') as HTMLTextAreaElement;
  private _send = el(
    'button',
    'yt-tryit-send jp-Button jp-mod-styled jp-mod-accept',
    'Send'
  ) as HTMLButtonElement;
  private _answer = el('div', 'yt-tryit-response');
}
