// The main-area views (JupyterLab tabs, opened by the commands of index.ts): Jobs (the list),
// one Job (detail, logs, runs), the job form, Datasets, one VC (quota, used, free, members,
// what runs in it), Experiments (the list) and one Experiment (charts and trials, experiments.ts).
// Each is the content of a MainAreaWidget; `view` and `arg` name it for the layout restorer and
// for the deep link `?yt=<view>[/<arg>]` (docs/jobs.md). The Models view (`models[/<vc>]`) is in
// models.ts.
// DOM hooks: .yt-view[data-view=V][data-arg=A]; the VC view's .yt-vc-view (.yt-vc-groups,
// .yt-vc-profiles, .yt-vc-jobs .yt-job), the others' hooks are in their modules.
import { Message } from '@lumino/messaging';
import { Widget } from '@lumino/widgets';

import { IApiInfo, REFRESH_MS, fetchInfo, fetchVCs, formatAmount } from './api';
import { DatasetsSection } from './datasets';
import { ExperimentDetail, ExperimentsList } from './experiments';
import { fetchDatasets } from './datasetsApi';
import { el } from './dom';
import { JobDetail, stateBadge } from './jobDetail';
import { JobForm } from './jobForm';
import { JobsList, JOBS_REFRESH_MS } from './jobs';
import { ACTIVE_STATES, IJob, fetchJob, fetchJobs } from './jobsApi';
import { vcCard } from './vcs';

export type ViewName =
  'jobs' | 'job' | 'form' | 'datasets' | 'vc' | 'models' | 'experiments' | 'experiment';
export const VIEWS: readonly ViewName[] = [
  'jobs',
  'job',
  'form',
  'datasets',
  'vc',
  'models',
  'experiments',
  'experiment'
];

/** What the views ask of the application (index.ts's commands). */
export interface IViewActions {
  open: (view: ViewName, arg?: string) => void;
}

let info: Promise<IApiInfo | null> | null = null;
/** This server's VC and profile (asked once). */
export function serverInfo(): Promise<IApiInfo | null> {
  info = info ?? fetchInfo().catch(() => null);
  return info;
}

/** `job/42` -> ['job', '42']; null for anything else (the deep link's value is user input). */
export function parseRoute(value: string | null): [ViewName, string] | null {
  const match =
    /^(jobs|job|form|datasets|vc|models|experiments|experiment)(?:\/([A-Za-z0-9._-]{1,64}))?$/.exec(
      value ?? ''
    );
  if (!match) {
    return null;
  }
  const view = match[1] as ViewName;
  const arg = match[2] ?? '';
  if ((view === 'job' || view === 'experiment') && !/^\d+$/.test(arg)) {
    return null;
  }
  if (view === 'vc' && !arg) {
    return null;
  }
  return [view, arg];
}

export abstract class YitongView extends Widget {
  constructor(
    readonly view: ViewName,
    readonly arg: string
  ) {
    super();
    this.addClass('yt-view');
    this.addClass('yt-panel');
    this.node.dataset.view = view;
    this.node.dataset.arg = arg;
    this.title.closable = true;
  }

  abstract refresh(): Promise<void>;

  protected onAfterShow(msg: Message): void {
    super.onAfterShow(msg);
    void this.refresh();
  }
}

export class JobsView extends YitongView {
  constructor(actions: IViewActions) {
    super('jobs', '');
    this.title.label = 'Jobs';
    this._list = new JobsList({
      onOpen: job => actions.open('job', String(job.id)),
      onNew: () => actions.open('form'),
      isVisible: () => this.isVisible && !this.isDisposed
    });
    this.node.append(this._list.node);
    void this.refresh();
  }

  refresh(): Promise<void> {
    return this._list.refresh();
  }

  dispose(): void {
    this._list.dispose();
    super.dispose();
  }

  private _list: JobsList;
}

export class JobView extends YitongView {
  constructor(id: number, actions: IViewActions, close: () => void) {
    super('job', String(id));
    this._id = id;
    this._actions = actions;
    this._close = close;
    this.title.label = `Job ${id}`;
    this._error.hidden = true;
    this.node.append(this._error);
    void this.refresh();
  }

  async refresh(): Promise<void> {
    window.clearTimeout(this._timer);
    try {
      const job = await fetchJob(this._id);
      this._error.hidden = true;
      this._show(job);
    } catch (error) {
      this._error.textContent = error instanceof Error ? error.message : String(error);
      this._error.hidden = false;
    }
    if (!this.isDisposed && (!this._detail || ACTIVE_STATES.has(this._state))) {
      this._timer = window.setTimeout(() => {
        if (this.isVisible) {
          void this.refresh();
        }
      }, JOBS_REFRESH_MS);
    }
  }

  private _show(job: IJob): void {
    this._state = job.state;
    this.title.label = `Job ${job.id}: ${job.name}`;
    if (this._detail) {
      this._detail.update(job);
      return;
    }
    this._detail = new JobDetail(job, {
      onClose: this._close,
      onClone: () => this._actions.open('form', String(job.id)),
      onChanged: () => void this.refresh()
    });
    this.node.append(this._detail.node);
  }

  protected onAfterHide(msg: Message): void {
    super.onAfterHide(msg);
    this._detail?.pause();
  }

  protected onAfterShow(msg: Message): void {
    this._detail?.resume();
    super.onAfterShow(msg);
  }

  dispose(): void {
    window.clearTimeout(this._timer);
    this._detail?.dispose();
    super.dispose();
  }

  private _id: number;
  private _state = '';
  private _actions: IViewActions;
  private _close: () => void;
  private _detail: JobDetail | null = null;
  private _timer = 0;
  private _error = el('div', 'yt-error');
}

/** The form; `arg` is the id of the job cloned, or empty. */
export class JobFormView extends YitongView {
  constructor(clone: string, actions: IViewActions, close: () => void) {
    super('form', clone);
    this.title.label = clone ? `New job (clone of ${clone})` : 'New job';
    this._form = new JobForm(job => {
      actions.open('job', String(job.id));
      close();
    });
    this._error.hidden = true;
    this.node.append(this._error, this._form.node);
    void this._start(clone);
  }

  private async _start(clone: string): Promise<void> {
    try {
      const [vcs, here, datasets, job] = await Promise.all([
        fetchVCs(),
        serverInfo(),
        fetchDatasets().catch(() => []),
        clone ? fetchJob(Number(clone)) : Promise.resolve(null)
      ]);
      this._form.setVCs(
        vcs.map(vc => vc.name),
        here?.vc ?? null
      );
      this._form.setDatasets(datasets.map(d => `${d.vc}/${d.name}`));
      if (job) {
        this._form.load(job.spec);
      }
    } catch (error) {
      this._error.textContent = error instanceof Error ? error.message : String(error);
      this._error.hidden = false;
    }
  }

  async refresh(): Promise<void> {
    // the form keeps what is typed
  }

  private _form: JobForm;
  private _error = el('div', 'yt-error');
}

export class DatasetsView extends YitongView {
  constructor() {
    super('datasets', '');
    this.title.label = 'Datasets';
    this._section = new DatasetsSection(() => this._vc);
    this.node.append(this._section.node);
    void serverInfo().then(here => (this._vc = here?.vc ?? null));
    void this.refresh();
  }

  refresh(): Promise<void> {
    return this._section.refresh();
  }

  private _section: DatasetsSection;
  private _vc: string | null = null;
}

export class VCView extends YitongView {
  constructor(name: string, actions: IViewActions) {
    super('vc', name);
    this._actions = actions;
    this.title.label = `VC ${name}`;
    this._error.hidden = true;
    this.node.append(this._error, this._body);
    this._body.className = 'yt-vc-view';
    this._timer = window.setInterval(() => {
      if (this.isVisible) {
        void this.refresh();
      }
    }, REFRESH_MS);
    void this.refresh();
  }

  dispose(): void {
    window.clearInterval(this._timer);
    super.dispose();
  }

  async refresh(): Promise<void> {
    try {
      const [vcs, jobs, here] = await Promise.all([
        fetchVCs(),
        fetchJobs().catch(() => [] as IJob[]),
        serverInfo()
      ]);
      const vc = vcs.find(v => v.name === this.arg);
      if (!vc) {
        throw new Error(`No VC named ${this.arg} among yours.`);
      }
      this._error.hidden = true;
      const list = (cls: string, title: string, items: string[] | undefined) => {
        const box = el('div', cls);
        box.append(
          el('div', 'yt-title yt-section-title', title),
          el('div', 'yt-vc-list', items?.length ? items.join(', ') : '-')
        );
        return box;
      };
      const active = jobs.filter(j => j.vc === vc.name && ACTIVE_STATES.has(j.state));
      const running = el('div', 'yt-vc-jobs');
      running.append(
        el('div', 'yt-title yt-section-title', `Running and waiting jobs (${active.length})`),
        ...(active.length
          ? active.map(job => {
              const row = el('button', 'yt-job') as HTMLButtonElement;
              row.type = 'button';
              row.dataset.job = String(job.id);
              row.dataset.state = job.state;
              row.onclick = () => this._actions.open('job', String(job.id));
              const title = el('span', 'yt-job-title');
              title.append(
                el('span', 'yt-job-name', `#${job.id} ${job.name} (${job.user})`),
                stateBadge(job.state)
              );
              row.append(title);
              return row;
            })
          : [el('div', 'yt-empty', 'Nothing of yours runs here now.')])
      );
      this._body.replaceChildren(
        vcCard(vc, here?.vc ?? null),
        list('yt-vc-groups', 'Members (groups)', vc.groups),
        list('yt-vc-profiles', 'Server profiles', vc.profiles),
        list(
          'yt-vc-caps',
          'Per-person caps',
          Object.entries(vc.user_caps ?? {}).map(([k, v]) => `${k}: ${formatAmount(k, v)}`)
        ),
        running
      );
    } catch (error) {
      this._error.textContent = error instanceof Error ? error.message : String(error);
      this._error.hidden = false;
    }
  }

  private _actions: IViewActions;
  private _timer: number;
  private _error = el('div', 'yt-error');
  private _body = el('div', 'yt-vc-view');
}

export class ExperimentsView extends YitongView {
  constructor(actions: IViewActions) {
    super('experiments', '');
    this.title.label = 'Experiments';
    this._list = new ExperimentsList({
      onOpen: id => actions.open('experiment', String(id)),
      isVisible: () => this.isVisible && !this.isDisposed
    });
    this.node.append(this._list.node);
    void this.refresh();
  }

  refresh(): Promise<void> {
    return this._list.refresh();
  }

  dispose(): void {
    this._list.dispose();
    super.dispose();
  }

  private _list: ExperimentsList;
}

export class ExperimentView extends YitongView {
  constructor(id: number, actions: IViewActions) {
    super('experiment', String(id));
    this.title.label = `Experiment ${id}`;
    this._detail = new ExperimentDetail(id, {
      onTitle: title => (this.title.label = title),
      onJob: job => actions.open('job', String(job)),
      isVisible: () => this.isVisible && !this.isDisposed
    });
    this.node.append(this._detail.node);
    void this.refresh();
  }

  refresh(): Promise<void> {
    return this._detail.refresh();
  }

  dispose(): void {
    this._detail.dispose();
    super.dispose();
  }

  private _detail: ExperimentDetail;
}
