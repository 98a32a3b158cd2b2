// The "Jobs" section of the Yitong sidebar: the queue (newest first, state badges, queue position
// and reason for waiting jobs, age), a detail view on click (jobDetail.ts) and a submit form
// (jobForm.ts). While any shown job is active the section reloads every JOBS_REFRESH_MS, only
// while the panel is visible; the panel's own 15 s refresh covers the rest.
// DOM hooks: .yt-jobs, .yt-jobs-error, .yt-job-new, .yt-job-list,
// .yt-job[data-job=ID][data-state=S] (.yt-job-state, .yt-job-title, .yt-job-meta,
// .yt-job-position, .yt-job-reason, .yt-job-age), .yt-jobs-more; the form's and the detail's hooks
// are listed in their modules.
import { el } from './dom';
import { JobDetail, stateBadge } from './jobDetail';
import { JobForm } from './jobForm';
import { ACTIVE_STATES, IJob, ageText, fetchJob, fetchJobs } from './jobsApi';

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

export class JobsSection {
  readonly node = el('div', 'yt-jobs');

  constructor(options: { defaultVC: () => string | null; isVisible: () => boolean }) {
    this._defaultVC = options.defaultVC;
    this._isVisible = options.isVisible;
    const header = el('div', 'yt-header');
    const add = el('button', 'yt-job-new jp-Button jp-mod-styled', 'New job') as HTMLButtonElement;
    add.type = 'button';
    add.title = 'Submit a job';
    add.onclick = () => this._form.show();
    header.append(el('span', 'yt-title', 'Jobs'), add);
    this._error.hidden = true;
    this._list.setAttribute('aria-label', 'Jobs, newest first');
    this._form = new JobForm(
      job => {
        this._select(job);
        void this.refresh();
      },
      () => undefined
    );
    this.node.append(header, this._form.node, this._error, this._detailBox, this._list);
  }

  /** The VCs the user may submit to (the panel's VC cards). */
  setVCs(names: string[]): void {
    this._form.setVCs(names, this._defaultVC());
  }

  /** Reload the list and the open detail; schedules the next fast reload while jobs are active. */
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

  /** The panel was hidden: stop the log stream (the timer stops by itself). */
  pause(): void {
    this._detail?.pause();
  }

  /** The panel is shown again. */
  resume(): void {
    this._detail?.resume();
    void this.refresh();
  }

  dispose(): void {
    this._disposed = true;
    window.clearTimeout(this._timer);
    this._detail?.dispose();
    this._detail = null;
  }

  private async _load(): Promise<void> {
    try {
      const openId = this._detail?.jobId;
      const [jobs, detail] = await Promise.all([
        fetchJobs(),
        openId !== undefined ? fetchJob(openId).catch(() => null) : Promise.resolve(null)
      ]);
      this._jobs = jobs;
      this._error.hidden = true;
      if (detail && this._detail?.jobId === detail.id) {
        this._detail.update(detail);
      }
      this._render();
    } catch (error) {
      this._error.textContent = error instanceof Error ? error.message : String(error);
      this._error.hidden = false;
    }
  }

  private _render(): void {
    const selected = this._detail?.jobId;
    const shown = this._jobs.slice(0, SHOWN);
    const rows = shown.map(job => jobRow(job, job.id === selected, () => this._select(job)));
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

  private _select(job: IJob): void {
    if (this._detail?.jobId === job.id) {
      return;
    }
    this._detail?.dispose();
    const detail = new JobDetail(job, {
      onClose: () => {
        detail.dispose();
        if (this._detail === detail) {
          this._detail = null;
        }
        this._render();
      },
      onClone: spec => this._form.show(spec),
      onChanged: () => void this.refresh()
    });
    this._detail = detail;
    this._detailBox.replaceChildren(detail.node);
    detail.node.scrollIntoView?.({ block: 'nearest' });
    this._render();
    // the list's model lacks ranks and access: fetch the full one now
    void fetchJob(job.id)
      .then(full => {
        if (this._detail === detail) {
          detail.update(full);
        }
      })
      .catch(() => undefined);
    this._schedule();
  }

  private _schedule(): void {
    window.clearTimeout(this._timer);
    const active =
      this._jobs.some(j => ACTIVE_STATES.has(j.state)) ||
      (this._detail !== null && ACTIVE_STATES.has(this._detail.node.dataset.state ?? ''));
    if (this._disposed || !active) {
      return;
    }
    this._timer = window.setTimeout(() => {
      if (this._isVisible()) {
        void this.refresh();
      }
    }, JOBS_REFRESH_MS);
  }

  private _defaultVC: () => string | null;
  private _isVisible: () => boolean;
  private _form: JobForm;
  private _detail: JobDetail | null = null;
  private _jobs: IJob[] = [];
  private _pending: Promise<void> | null = null;
  private _timer = 0;
  private _disposed = false;
  private _error = el('div', 'yt-error yt-jobs-error');
  private _list = el('div', 'yt-job-list');
  private _detailBox = el('div', 'yt-job-detail-box');
}
