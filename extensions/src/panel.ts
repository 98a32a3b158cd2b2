// The "Yitong" sidebar: a compact launcher and status summary. The user's VCs with usage bars
// (a click opens the VC's tab), the counts of running and queued jobs, and buttons that open the
// main-area views (views.ts): Jobs, New job, Datasets, Experiments.
// DOM hooks for browser tests: #yitong-panel, .yt-vc[data-vc=NAME] (vcs.ts), .yt-error,
// .yt-refresh, .yt-open-jobs, .yt-open-form, .yt-open-datasets, .yt-open-experiments, .yt-job-counts
// (data-running, data-queued).
import { refreshIcon } from '@jupyterlab/ui-components';
import { Message } from '@lumino/messaging';
import { Widget } from '@lumino/widgets';

import { IApiInfo, IVC, REFRESH_MS, fetchInfo, fetchVCs } from './api';
import { el } from './dom';
import { yitongIcon } from './icon';
import { IJob, fetchJobs } from './jobsApi';
import { vcCard } from './vcs';

/** What the sidebar's items do (commands of index.ts). */
export interface IPanelActions {
  openJobs: () => void;
  openForm: () => void;
  openDatasets: () => void;
  openExperiments: () => void;
  openVC: (name: string) => void;
}

export class YitongPanel extends Widget {
  constructor(actions: IPanelActions) {
    super();
    this.id = 'yitong-panel';
    this.addClass('yt-panel');
    this.title.icon = yitongIcon;
    this.title.caption = 'Yitong: virtual clusters, jobs, datasets';
    this._actions = actions;
    const header = el('div', 'yt-header');
    const button = el('button', 'yt-refresh jp-Button jp-mod-minimal') as HTMLButtonElement;
    button.title = 'Refresh';
    refreshIcon.element({ container: button });
    button.onclick = () => void this.refresh();
    header.append(el('span', 'yt-title', 'Yitong'), button);
    const launch = el('div', 'yt-launch');
    const open = (cls: string, text: string, help: string, onclick: () => void) => {
      const b = el('button', `${cls} jp-Button jp-mod-styled`, text) as HTMLButtonElement;
      b.type = 'button';
      b.title = help;
      b.onclick = onclick;
      return b;
    };
    launch.append(
      open('yt-open-jobs', 'Jobs', 'Open the jobs list', actions.openJobs),
      open('yt-open-form jp-mod-accept', 'New job', 'Open the job form', actions.openForm),
      open('yt-open-datasets', 'Datasets', 'Open the datasets', actions.openDatasets),
      open('yt-open-experiments', 'Experiments', 'Open the experiments', actions.openExperiments)
    );
    this._error.hidden = true;
    this.node.append(
      header,
      launch,
      this._counts,
      this._error,
      el('div', 'yt-title yt-section-title', 'Virtual clusters'),
      this._list,
      this._updated
    );
    this._timer = window.setInterval(() => {
      if (this.isVisible) {
        void this.refresh();
      }
    }, REFRESH_MS);
  }

  /** Fetch the VCs and the jobs and redraw; a failure shows the service's sentence. */
  async refresh(): Promise<void> {
    if (this._pending) {
      return this._pending;
    }
    this._pending = this._load().finally(() => (this._pending = null));
    return this._pending;
  }

  private async _load(): Promise<void> {
    this.node.classList.add('yt-loading');
    try {
      if (this._info === null) {
        this._info = await fetchInfo().catch(() => null);
      }
      const [vcs, jobs] = await Promise.all([fetchVCs(), fetchJobs().catch(() => null)]);
      this._error.hidden = true;
      this._error.textContent = '';
      this._render(vcs, jobs);
    } catch (error) {
      this._error.textContent = error instanceof Error ? error.message : String(error);
      this._error.hidden = false;
    } finally {
      this.node.classList.remove('yt-loading');
      this._updated.textContent = `Updated ${new Date().toLocaleTimeString()}`;
    }
  }

  private _render(vcs: IVC[], jobs: IJob[] | null): void {
    const current = this._info?.vc ?? null;
    const cards = vcs.map(vc => {
      const card = vcCard(vc, current);
      card.classList.add('yt-clickable');
      card.tabIndex = 0;
      card.title = `Open VC ${vc.name}`;
      card.setAttribute('role', 'button');
      card.onclick = () => this._actions.openVC(vc.name);
      card.onkeydown = event => {
        if (event.key === 'Enter' || event.key === ' ') {
          event.preventDefault();
          this._actions.openVC(vc.name);
        }
      };
      return card;
    });
    this._list.replaceChildren(
      ...(cards.length
        ? cards
        : [el('div', 'yt-empty', 'You are not in any VC yet: ask an administrator.')])
    );
    if (jobs) {
      const running = jobs.filter(j => j.state === 'running').length;
      const queued = jobs.filter(j => j.state === 'queued' || j.state === 'admitted').length;
      this._counts.dataset.running = String(running);
      this._counts.dataset.queued = String(queued);
      this._counts.textContent = `Jobs: ${running} running · ${queued} waiting · ${jobs.length} in all`;
    }
  }

  protected onAfterShow(msg: Message): void {
    super.onAfterShow(msg);
    void this.refresh();
  }

  dispose(): void {
    window.clearInterval(this._timer);
    super.dispose();
  }

  private _actions: IPanelActions;
  private _error = el('div', 'yt-error');
  private _counts = el('div', 'yt-job-counts');
  private _list = el('div', 'yt-vcs');
  private _updated = el('div', 'yt-updated');
  private _info: IApiInfo | null = null;
  private _pending: Promise<void> | null = null;
  private _timer: number;
}
