// The Experiments views (main-area tabs, views.ts): the list of experiments, and one experiment
// with its charts (hpoCharts.ts: best so far, intermediate curves with pruned trials marked,
// parallel coordinates, parameter importance) and its sortable trials table. Both poll with
// `If-None-Match` (hpoApi.ts) every LIVE_MS while an experiment runs and every REFRESH_MS
// otherwise, only while visible; `dispose()` (the tab closed) stops the timer and aborts the
// request in flight.
// DOM hooks: .yt-experiments (.yt-exp-row[data-experiment=ID][data-state=S]),
// .yt-experiment[data-experiment=ID][data-state=S] (.yt-exp-summary, .yt-exp-stop,
// .yt-exp-resume, .yt-chart-best, .yt-chart-curves (.yt-curve[data-trial][data-state],
// .yt-pruned-mark), .yt-chart-parallel, .yt-chart-importance (.yt-importance-row[data-param]),
// .yt-trials (th[data-sort][aria-sort], tr.yt-trial[data-trial][data-state])).
import { REFRESH_MS } from './api';
import { el } from './dom';
import {
  EXPERIMENTS_PATH,
  IExperiment,
  experimentPath,
  fetchImportance,
  getIfChanged,
  resumeExperiment,
  stopExperiment
} from './hpoApi';
import {
  ITrialRow,
  SvgNode,
  bestSoFarChart,
  curvesChart,
  durationSeconds,
  durationText,
  flatParams,
  fmt,
  importanceChart,
  paramNames,
  parallelChart,
  sortTrials
} from './hpoCharts';
import { stateBadge } from './jobDetail';

/** Seconds between polls while an experiment runs. */
export const LIVE_MS = 2000;
/** Rows of the trials table drawn at most (the sort applies to all of them first). */
const TABLE_ROWS = 500;

const SVG_NS = 'http://www.w3.org/2000/svg';

/** An `SvgNode` tree as DOM nodes (attributes and text set as values, never parsed as markup). */
export function toDom(node: SvgNode): SVGElement {
  const out = document.createElementNS(SVG_NS, node.tag);
  for (const key of Object.keys(node.attrs)) {
    out.setAttribute(key, String(node.attrs[key]));
  }
  if (node.text !== undefined) {
    out.textContent = node.text;
  }
  for (const child of node.children ?? []) {
    out.appendChild(toDom(child));
  }
  return out;
}

const message = (error: unknown) => (error instanceof Error ? error.message : String(error));

/**
 * Polls one path with its ETag: `onData` with each changed answer; the next poll after
 * `interval()` ms, skipped while `visible()` is false; `stop()` ends it for good.
 */
class Poller<T> {
  constructor(
    private readonly path: string,
    private readonly onData: (data: T) => void,
    private readonly onError: (error: unknown) => void,
    private readonly interval: () => number,
    private readonly visible: () => boolean,
    private readonly onTick: () => void = () => undefined
  ) {}

  /** Poll now (and go on polling). */
  async now(): Promise<void> {
    if (this._stopped) {
      return;
    }
    window.clearTimeout(this._timer);
    this._abort?.abort();
    const abort = new AbortController();
    this._abort = abort;
    try {
      const answer = await getIfChanged<T>(this.path, this._etag, abort.signal);
      if (answer && !this._stopped) {
        this._etag = answer.etag;
        this.onData(answer.data);
      }
      if (!this._stopped) {
        this.onTick();
      }
    } catch (error) {
      if (!abort.signal.aborted && !this._stopped) {
        this.onError(error);
      }
    }
    if (this._abort === abort) {
      this._schedule();
    }
  }

  /** Forget the ETag (the next poll gets the whole answer). */
  reset(): void {
    this._etag = '';
  }

  stop(): void {
    this._stopped = true;
    window.clearTimeout(this._timer);
    this._abort?.abort();
  }

  private _schedule(): void {
    if (this._stopped) {
      return;
    }
    window.clearTimeout(this._timer);
    this._timer = window.setTimeout(() => {
      if (this.visible()) {
        void this.now();
      } else {
        this._schedule();
      }
    }, this.interval());
  }

  private _etag = '';
  private _timer = 0;
  private _stopped = false;
  private _abort: AbortController | null = null;
}

function countsText(exp: IExperiment): string {
  const counts = Object.keys(exp.counts ?? {})
    .sort()
    .map(s => `${exp.counts[s]} ${s}`);
  return counts.length ? counts.join(', ') : 'no trials yet';
}

function bestText(exp: IExperiment): string {
  const metric = exp.config.objective.metric;
  return exp.best ? `best ${metric} ${fmt(exp.best.value)} (trial ${exp.best.number})` : '';
}

/** The list of experiments (newest first); a click opens one. */
export class ExperimentsList {
  readonly node = el('div', 'yt-experiments');

  constructor(options: { onOpen: (id: number) => void; isVisible: () => boolean }) {
    this._onOpen = options.onOpen;
    const header = el('div', 'yt-header');
    header.append(el('span', 'yt-title', 'Experiments'));
    this._error.hidden = true;
    this.node.append(header, this._error, this._table);
    this._poller = new Poller<IExperiment[]>(
      EXPERIMENTS_PATH,
      list => this._render(list),
      error => this._fail(error),
      () => (this._live ? LIVE_MS : REFRESH_MS),
      options.isVisible
    );
  }

  refresh(): Promise<void> {
    return this._poller.now();
  }

  dispose(): void {
    this._poller.stop();
  }

  private _fail(error: unknown): void {
    this._error.textContent = message(error);
    this._error.hidden = false;
  }

  private _render(list: IExperiment[]): void {
    this._error.hidden = true;
    this._live = list.some(e => e.state === 'running');
    if (!list.length) {
      this._table.replaceChildren(
        el(
          'div',
          'yt-empty',
          'No experiments yet: create one with yt hpo create or %%yt hpo create (docs/hpo.md).'
        )
      );
      return;
    }
    const table = el('table', 'yt-table yt-exp-table');
    const head = el('tr', '');
    for (const name of ['#', 'Name', 'VC', 'Owner', 'State', 'Trials', 'Best']) {
      head.append(el('th', '', name));
    }
    table.append(el('thead', ''), el('tbody', ''));
    table.firstChild!.appendChild(head);
    for (const exp of list) {
      const row = el('tr', 'yt-exp-row');
      row.dataset.experiment = String(exp.id);
      row.dataset.state = exp.state;
      row.tabIndex = 0;
      row.title = `Open experiment ${exp.id}`;
      row.onclick = () => this._onOpen(exp.id);
      row.onkeydown = event => {
        if (event.key === 'Enter' || event.key === ' ') {
          event.preventDefault();
          this._onOpen(exp.id);
        }
      };
      const state = el('td', '');
      state.append(stateBadge(exp.state));
      const done = Object.keys(exp.counts ?? {})
        .filter(s => s !== 'running' && s !== 'waiting')
        .reduce((sum, s) => sum + exp.counts[s], 0);
      row.append(
        el('td', '', String(exp.id)),
        el('td', 'yt-exp-name', exp.name),
        el('td', '', exp.vc),
        el('td', '', exp.user),
        state,
        el('td', '', `${done} / ${exp.config.max_trials}`),
        el('td', '', exp.best ? fmt(exp.best.value) : '-')
      );
      table.lastChild!.appendChild(row);
    }
    this._table.replaceChildren(table);
  }

  private _onOpen: (id: number) => void;
  private _poller: Poller<IExperiment[]>;
  private _live = false;
  private _error = el('div', 'yt-error');
  private _table = el('div', 'yt-exp-list');
}

/** One experiment, live: summary, stop/resume, four charts and the trials table. */
export class ExperimentDetail {
  readonly node = el('div', 'yt-experiment');

  constructor(
    readonly id: number,
    options: {
      onTitle: (title: string) => void;
      onJob: (id: number) => void;
      isVisible: () => boolean;
    }
  ) {
    this._options = options;
    this.node.dataset.experiment = String(id);
    this._error.hidden = true;
    this._stop.type = 'button';
    this._stop.onclick = () => void this._act(stopExperiment);
    this._resume.type = 'button';
    this._resume.onclick = () => void this._act(resumeExperiment);
    const heading = el('div', 'yt-header');
    const actions = el('span', 'yt-exp-actions');
    actions.append(this._stop, this._resume);
    heading.append(this._title, actions);
    const charts = el('div', 'yt-exp-charts');
    charts.append(
      this._box('Best so far', this._best),
      this._box('Intermediate results', this._curves),
      this._box('Parallel coordinates', this._parallel),
      this._box('Parameter importance', this._importance)
    );
    this.node.append(
      heading,
      this._summary,
      this._error,
      charts,
      el('div', 'yt-title yt-section-title', 'Trials'),
      this._trials
    );
    this._poller = new Poller<IExperiment>(
      experimentPath(id),
      exp => this._show(exp),
      error => this._fail(error),
      () => (this._exp?.state === 'running' ? LIVE_MS : REFRESH_MS),
      options.isVisible,
      () => this._tick()
    );
  }

  refresh(): Promise<void> {
    return this._poller.now();
  }

  dispose(): void {
    this._poller.stop();
  }

  private _box(title: string, body: HTMLElement): HTMLElement {
    const box = el('figure', 'yt-exp-chart');
    box.append(el('figcaption', 'yt-section-title', title), body);
    return box;
  }

  private async _act(call: (id: number) => Promise<IExperiment>): Promise<void> {
    try {
      await call(this.id);
      this._poller.reset();
      await this._poller.now();
    } catch (error) {
      this._fail(error);
    }
  }

  private _fail(error: unknown): void {
    this._error.textContent = message(error);
    this._error.hidden = false;
  }

  private _show(exp: IExperiment): void {
    this._error.hidden = true;
    this._exp = exp;
    const { metric, direction } = exp.config.objective;
    const trials = exp.trials ?? [];
    this.node.dataset.state = exp.state;
    this._options.onTitle(`Experiment ${exp.id}: ${exp.name}`);
    this._title.replaceChildren(
      el('span', 'yt-title', `#${exp.id} ${exp.name}`),
      stateBadge(exp.state)
    );
    const assessor = exp.config.assessor ? `, ${exp.config.assessor.name}` : '';
    this._summary.textContent = [
      `${exp.vc} · ${exp.user} · ${exp.config.tuner.name}${assessor} · ${direction} ${metric}`,
      `${trials.length} of ${exp.config.max_trials} trials (${countsText(exp)}), ` +
        `${exp.config.concurrency} at a time`,
      bestText(exp),
      exp.reason
    ]
      .filter(Boolean)
      .join(' — ');
    this._stop.hidden = exp.state !== 'running';
    this._resume.hidden = exp.state === 'running';
    const names = paramNames(trials);
    this._best.replaceChildren(
      toDom(bestSoFarChart(trials, exp.best_so_far ?? [], metric, direction))
    );
    this._curves.replaceChildren(toDom(curvesChart(trials, metric)));
    this._parallel.replaceChildren(toDom(parallelChart(trials, names, metric, direction)));
    const complete = exp.counts?.complete ?? 0;
    if (complete !== this._importanceFor) {
      this._importanceFor = complete;
      void fetchImportance(this.id)
        .then(importance => {
          this._importance.replaceChildren(toDom(importanceChart(importance)));
        })
        .catch(error => this._fail(error));
    }
    this._renderTable();
  }

  /** Every poll: running trials' durations move even when nothing else changed. */
  private _tick(): void {
    if (this._exp?.trials?.some(t => t.state === 'running')) {
      this._renderTable();
    }
  }

  private _renderTable(): void {
    const exp = this._exp;
    if (!exp) {
      return;
    }
    const trials = exp.trials ?? [];
    if (!trials.length) {
      this._trials.replaceChildren(el('div', 'yt-empty', 'No trials yet.'));
      return;
    }
    const now = Date.now();
    const names = paramNames(trials);
    const metric = exp.config.objective.metric;
    const columns: [string, string][] = [
      ['number', '#'],
      ['state', 'State'],
      ...names.map(n => [`param:${n}`, n] as [string, string]),
      ['value', metric],
      ['duration', 'Duration']
    ];
    const table = el('table', 'yt-table yt-trials');
    const head = el('tr', '');
    for (const [key, label] of columns) {
      const th = el('th', '');
      th.dataset.sort = key;
      const sorted = this._sort.key === key;
      th.setAttribute(
        'aria-sort',
        sorted ? (this._sort.ascending ? 'ascending' : 'descending') : 'none'
      );
      const button = el('button', 'yt-sort', label) as HTMLButtonElement;
      button.type = 'button';
      button.title = `Sort by ${label}`;
      button.onclick = () => {
        this._sort = {
          key,
          ascending: this._sort.key === key ? !this._sort.ascending : key !== 'value'
        };
        this._renderTable();
      };
      if (sorted) {
        button.append(el('span', 'yt-sort-mark', this._sort.ascending ? ' ▲' : ' ▼'));
      }
      th.append(button);
      head.append(th);
    }
    head.append(el('th', '', 'Job'));
    const body = el('tbody', '');
    const rows = sortTrials(trials, this._sort.key, this._sort.ascending, now);
    for (const trial of rows.slice(0, TABLE_ROWS)) {
      body.append(this._row(trial, names, now));
    }
    const thead = el('thead', '');
    thead.append(head);
    table.append(thead, body);
    const parts: HTMLElement[] = [table];
    if (rows.length > TABLE_ROWS) {
      parts.push(
        el('div', 'yt-empty', `${rows.length - TABLE_ROWS} more trials not shown (yt hpo show).`)
      );
    }
    this._trials.replaceChildren(...parts);
  }

  private _row(trial: ITrialRow, names: string[], now: number): HTMLElement {
    const row = el('tr', `yt-trial yt-trial-${trial.state}`);
    row.dataset.trial = String(trial.number);
    row.dataset.state = trial.state;
    const flat = flatParams(trial.params);
    const state = el('td', '');
    state.append(stateBadge(trial.state));
    if (trial.reason) {
      state.title = trial.reason;
    }
    row.append(el('td', '', String(trial.number)), state);
    for (const name of names) {
      const v = flat[name];
      row.append(el('td', 'yt-param', v === undefined ? '-' : typeof v === 'number' ? fmt(v) : v));
    }
    row.append(
      el('td', 'yt-value', fmt(trial.value)),
      el('td', 'yt-duration', durationText(durationSeconds(trial, now)))
    );
    const job = el('td', '');
    if (trial.job_id) {
      const link = el('button', 'yt-link yt-trial-job', `#${trial.job_id}`) as HTMLButtonElement;
      link.type = 'button';
      link.title = `Open job ${trial.job_id} (logs, TensorBoard)`;
      link.onclick = () => this._options.onJob(trial.job_id as number);
      job.append(link);
    }
    row.append(job);
    return row;
  }

  private _options: { onTitle: (title: string) => void; onJob: (id: number) => void };
  private _poller: Poller<IExperiment>;
  private _exp: IExperiment | null = null;
  private _importanceFor = -1;
  private _sort: { key: string; ascending: boolean } = { key: 'number', ascending: true };
  private _title = el('span', 'yt-exp-title');
  private _summary = el('div', 'yt-exp-summary');
  private _error = el('div', 'yt-error');
  private _stop = el(
    'button',
    'yt-exp-stop jp-Button jp-mod-styled jp-mod-warn',
    'Stop'
  ) as HTMLButtonElement;
  private _resume = el(
    'button',
    'yt-exp-resume jp-Button jp-mod-styled',
    'Resume'
  ) as HTMLButtonElement;
  private _best = el('div', 'yt-exp-chart-body');
  private _curves = el('div', 'yt-exp-chart-body');
  private _parallel = el('div', 'yt-exp-chart-body');
  private _importance = el('div', 'yt-exp-chart-body');
  private _trials = el('div', 'yt-exp-trials');
}
