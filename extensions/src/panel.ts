// The "Yitong" sidebar: the user's VCs with quota / used / free per resource as bars, then the
// Jobs section (jobs.ts) and the Datasets section (datasets.ts).
// DOM hooks for browser tests: #yitong-panel, .yt-vc[data-vc=NAME],
// .yt-resource[data-resource=R] (data-quota/data-used/data-free), .yt-error, .yt-refresh;
// the Jobs and Datasets sections' hooks are listed in jobs.ts and datasets.ts.
import { refreshIcon } from '@jupyterlab/ui-components';
import { Message } from '@lumino/messaging';
import { Widget } from '@lumino/widgets';

import { IApiInfo, IVC, fetchInfo, fetchVCs, formatAmount, resourceNames } from './api';
import { DatasetsSection } from './datasets';
import { JobsSection } from './jobs';
import { yitongIcon } from './icon';
import { el } from './dom';

export const REFRESH_MS = 15000;

function resourceRow(vc: IVC, name: string): HTMLElement {
  const quota = vc.quota?.[name];
  const used = vc.used?.[name] ?? 0;
  const free = vc.free?.[name];
  const row = el('div', 'yt-resource');
  row.dataset.resource = name;
  row.dataset.quota = String(quota ?? '');
  row.dataset.used = String(used);
  row.dataset.free = String(free ?? '');
  const label = el('div', 'yt-resource-label');
  label.append(
    el('span', 'yt-resource-name', name),
    el(
      'span',
      'yt-resource-amounts',
      `${formatAmount(name, used)} / ${formatAmount(name, quota)} used · ${formatAmount(name, free)} free`
    )
  );
  const bar = el('div', 'yt-bar');
  const fill = el('div', 'yt-bar-used');
  const share = quota ? Math.min(100, (100 * used) / quota) : 0;
  fill.style.width = `${share}%`;
  if (share >= 90) {
    fill.classList.add('yt-bar-full');
  }
  bar.title = quota ? `${Math.round(share)}% used` : 'no quota';
  bar.appendChild(fill);
  row.append(label, bar);
  return row;
}

function vcCard(vc: IVC, current: string | null): HTMLElement {
  const card = el('div', 'yt-vc');
  card.dataset.vc = vc.name;
  const title = el('div', 'yt-vc-name', vc.name);
  if (vc.name === current) {
    card.classList.add('yt-current');
    title.appendChild(el('span', 'yt-vc-badge', 'this server'));
  }
  card.appendChild(title);
  if (vc.description) {
    card.appendChild(el('div', 'yt-vc-description', vc.description));
  }
  for (const name of resourceNames(vc)) {
    card.appendChild(resourceRow(vc, name));
  }
  return card;
}

export class YitongPanel extends Widget {
  constructor() {
    super();
    this.id = 'yitong-panel';
    this.addClass('yt-panel');
    this.title.icon = yitongIcon;
    this.title.caption = 'Yitong: virtual clusters, jobs, datasets';
    const header = el('div', 'yt-header');
    const button = el('button', 'yt-refresh jp-Button jp-mod-minimal') as HTMLButtonElement;
    button.title = 'Refresh';
    refreshIcon.element({ container: button });
    button.onclick = () => void this.refresh();
    header.append(el('span', 'yt-title', 'Virtual clusters'), button);
    this._error.hidden = true;
    this._datasets = new DatasetsSection(() => this._info?.vc ?? null);
    this._jobs = new JobsSection({
      defaultVC: () => this._info?.vc ?? null,
      isVisible: () => this.isVisible && !this.isDisposed
    });
    this.node.append(
      header,
      this._error,
      this._list,
      this._updated,
      this._jobs.node,
      this._datasets.node
    );
    this._timer = window.setInterval(() => {
      if (this.isVisible) {
        void this.refresh();
      }
    }, REFRESH_MS);
  }

  /** Fetch the VCs and redraw; a failure shows the service's sentence in `.yt-error`. */
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
      const [vcs] = await Promise.all([fetchVCs(), this._jobs.refresh(), this._datasets.refresh()]);
      this._jobs.setVCs(vcs.map(vc => vc.name));
      this._error.hidden = true;
      this._error.textContent = '';
      this._render(vcs);
    } catch (error) {
      this._error.textContent = error instanceof Error ? error.message : String(error);
      this._error.hidden = false;
    } finally {
      this.node.classList.remove('yt-loading');
      this._updated.textContent = `Updated ${new Date().toLocaleTimeString()}`;
    }
  }

  private _render(vcs: IVC[]): void {
    const current = this._info?.vc ?? null;
    this._list.replaceChildren(
      ...(vcs.length
        ? vcs.map(vc => vcCard(vc, current))
        : [el('div', 'yt-empty', 'You are not in any VC yet: ask an administrator.')])
    );
  }

  protected onAfterShow(msg: Message): void {
    super.onAfterShow(msg);
    this._jobs.resume();
    void this.refresh();
  }

  protected onAfterHide(msg: Message): void {
    super.onAfterHide(msg);
    this._jobs.pause();
  }

  dispose(): void {
    window.clearInterval(this._timer);
    this._jobs.dispose();
    super.dispose();
  }

  private _error = el('div', 'yt-error');
  private _list = el('div', 'yt-vcs');
  private _updated = el('div', 'yt-updated');
  private _info: IApiInfo | null = null;
  private _datasets: DatasetsSection;
  private _jobs: JobsSection;
  private _pending: Promise<void> | null = null;
  private _timer: number;
}
