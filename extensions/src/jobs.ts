// The Jobs list (a main-area tab, views.ts): the queue (newest first, state badges, queue
// position and reason for waiting jobs, age); a click opens the job's own tab (jobDetail.ts) and
// New job opens the form (jobForm.ts). While any shown job is active the list reloads every
// JOBS_REFRESH_MS, only while it is visible; otherwise every REFRESH_MS.
// DOM hooks: .yt-jobs, .yt-jobs-error, .yt-job-new, .yt-job-list,
// .yt-job[data-job=ID][data-state=S] (.yt-job-state, .yt-job-title, .yt-job-meta,
// .yt-job-position, .yt-job-reason, .yt-job-age), .yt-jobs-more.
import { el } from './dom';
import { stateBadge } from './jobDetail';
import { REFRESH_MS } from './api';
import { ACTIVE_STATES, IJob, ageText, fetchJobs } from './jobsApi';

export const JOBS_REFRESH_MS = 3000;

/** The list shows this many of the newest jobs. */
const SHOWN = 50;

function jobRow(job: IJob, selected: boolean, onclick: () => void): HTMLElement {
  const row = el('button', 'yt-job') as HTMLButtonElement;
  row.type = 'button';
  row.dataset.job = String(job.id);
  row.dataset.state = job.state;
  row.setAttribute('aria-pressed', String(selected));
  row.onclick = onclick;
  row.title = `Show job ${job.id}`;
  if (selected) {
    row.classList.add('yt-selected');
  }
  const title = el('span', 'yt-job-title');
  title.append(el('span', 'yt-job-name', `#${job.id} ${job.name}`), stateBadge(job.state));
  const meta = el('span', 'yt-job-meta');
  meta.append(
    el('span', 'yt-job-vc', job.vc),
    el('span', 'yt-job-user', job.user),
    el('span', 'yt-job-age', ageText(job.created))
  );
  meta.querySelector('.yt-job-age')!.setAttribute('title', `submitted ${job.created}`);
  row.append(title, meta);
  if (job.state === 'queued' && job.position) {
    row.append(el('span', 'yt-job-position', `#${job.position} in the queue`));
  }
  if (job.reason && job.state !== 'succeeded') {
    row.append(el('span', 'yt-job-reason', job.reason));
  }
  return row;
}

export class JobsList {
  readonly node = el('div', 'yt-jobs');

  constructor(options: {
    onOpen: (job: IJob) => void;
    onNew: () => void;
    isVisible: () => boolean;
  }) {
    this._options = options;
    const header = el('div', 'yt-header');
    const add = el('button', 'yt-job-new jp-Button jp-mod-styled', 'New job') as HTMLButtonElement;
    add.type = 'button';
    add.title = 'Submit a job';
    add.onclick = () => options.onNew();
    header.append(el('span', 'yt-title', 'Jobs'), add);
    this._error.hidden = true;
    this._list.setAttribute('aria-label', 'Jobs, newest first');
    this.node.append(header, this._error, this._list);
  }

  /** Reload the list; schedules the next reload (fast while jobs are active). */
  async refresh(): Promise<void> {
    if (this._pending) {
      return this._pending;
    }
    this._pending = this._load().finally(() => {
      this._pending = null;
      this._schedule();
    });
    return this._pending;
  }

  dispose(): void {
    this._disposed = true;
    window.clearTimeout(this._timer);
  }

  private async _load(): Promise<void> {
    try {
      this._jobs = await fetchJobs();
      this._error.hidden = true;
      this._render();
    } catch (error) {
      this._error.textContent = error instanceof Error ? error.message : String(error);
      this._error.hidden = false;
    }
  }

  private _render(): void {
    const shown = this._jobs.slice(0, SHOWN);
    const rows = shown.map(job => jobRow(job, false, () => this._options.onOpen(job)));
    if (!rows.length) {
      rows.push(
        el(
          'div',
          'yt-empty',
          'No jobs yet: submit one with New job, yt job submit or %yt job submit.'
        )
      );
    }
    if (this._jobs.length > SHOWN) {
      rows.push(
        el(
          'div',
          'yt-empty yt-jobs-more',
          `${this._jobs.length - SHOWN} older jobs not shown (yt job list).`
        )
      );
    }
    // keep the keyboard focus on the same job across reloads
    const focused = (document.activeElement as HTMLElement | null)?.closest?.(
      '.yt-job'
    ) as HTMLElement | null;
    const focusedId = focused && this._list.contains(focused) ? focused.dataset.job : undefined;
    this._list.replaceChildren(...rows);
    if (focusedId !== undefined) {
      (this._list.querySelector(`.yt-job[data-job="${focusedId}"]`) as HTMLElement | null)?.focus();
    }
  }

  private _schedule(): void {
    window.clearTimeout(this._timer);
    if (this._disposed) {
      return;
    }
    const active = this._jobs.some(j => ACTIVE_STATES.has(j.state));
    this._timer = window.setTimeout(
      () => {
        if (this._options.isVisible()) {
          void this.refresh();
        } else {
          this._schedule();
        }
      },
      active ? JOBS_REFRESH_MS : REFRESH_MS
    );
  }

  private _options: { onOpen: (job: IJob) => void; onNew: () => void; isVisible: () => boolean };
  private _jobs: IJob[] = [];
  private _pending: Promise<void> | null = null;
  private _timer = 0;
  private _disposed = false;
  private _error = el('div', 'yt-error yt-jobs-error');
  private _list = el('div', 'yt-job-list');
}
