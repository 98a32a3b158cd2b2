// The detail of one job in the Jobs section: state and reason, exit code, attempts, hosts, ports,
// devices, access, the runs (each expands to its ledger record's summary), the actions (Cancel,
// Retry, Clone, TensorBoard) and a live log per rank, streamed into a <pre>.
// DOM hooks: .yt-job-detail[data-job=ID][data-state=S], .yt-job-detail-state,
// .yt-job-field[data-field=F] (.yt-job-field-value), .yt-job-cancel, .yt-job-retry, .yt-job-clone,
// .yt-job-tensorboard, .yt-job-close, .yt-job-run[data-run=N] (.yt-job-run-toggle,
// .yt-job-run-record), .yt-job-rank-select, .yt-job-log (data-follow: live | done | error),
// .yt-job-log-status, .yt-job-action-error.
import { el } from './dom';
import {
  ACTIVE_STATES,
  IJob,
  IRun,
  RETRYABLE_STATES,
  cancelJob,
  fetchRun,
  followLog,
  retryJob,
  tensorboardUrl,
  timeText
} from './jobsApi';

/** Keep at most this many characters of a log in the page (the start is cut). */
const LOG_LIMIT = 2_000_000;

/** The state as a badge: its text is the state (colour only repeats it). */
export function stateBadge(state: string): HTMLElement {
  const badge = el('span', `yt-job-state yt-state-${state}`, state);
  badge.title = `state: ${state}`;
  return badge;
}

function plain(value: unknown): string {
  if (value === null || value === undefined || value === '') {
    return '-';
  }
  if (Array.isArray(value)) {
    return value.length ? value.map(plain).join(', ') : '-';
  }
  if (typeof value === 'object') {
    const entries = Object.entries(value as Record<string, unknown>).filter(
      ([, v]) => v !== null && v !== undefined
    );
    return entries.length ? entries.map(([k, v]) => `${k}: ${plain(v)}`).join(', ') : '-';
  }
  return String(value);
}

function field(name: string, label: string, value: unknown): HTMLElement {
  const row = el('div', 'yt-job-field');
  row.dataset.field = name;
  row.append(
    el('span', 'yt-job-field-label', label),
    el('span', 'yt-job-field-value', plain(value))
  );
  return row;
}

/** The ledger record as a few lines (pure: a record in, text out). */
export function runSummary(record: IRun): string {
  const lines = [
    `run ${record.run} · attempt ${record.attempt} · ${record.state}` +
      (record.exit_code !== null && record.exit_code !== undefined
        ? ` · exit ${record.exit_code}`
        : ''),
    `started ${timeText(record.started)} · finished ${timeText(record.finished)}`
  ];
  const metrics = Object.entries(record.metrics || {});
  lines.push(
    metrics.length
      ? `metrics: ${metrics.map(([k, v]) => `${k}=${plain(v)}`).join(', ')}`
      : 'metrics: none'
  );
  for (const input of record.inputs || []) {
    lines.push(`input ${input.mount}: ${input.dataset} v${input.version}`);
  }
  if (record.code?.commit) {
    lines.push(
      `code: ${record.code.commit}${record.code.dirty_hash ? ' (with local changes)' : ''}`
    );
  }
  const env = record.environment;
  if (env) {
    lines.push(
      `environment: ${plain({ image: env.image, kernel: env.kernel, python: env.python_version })}`
    );
  }
  if (record.artifacts?.length) {
    lines.push(
      `artifacts: ${record.artifacts.length} file${record.artifacts.length === 1 ? '' : 's'}`
    );
  }
  return lines.join('\n');
}

export class JobDetail {
  readonly node = el('section', 'yt-job-detail');

  /** `onClone(spec)` opens the form with the spec; `onChanged()` asks the list to reload. */
  constructor(
    job: IJob,
    handlers: {
      onClose: () => void;
      onClone: (spec: Record<string, unknown>) => void;
      onChanged: () => void;
    }
  ) {
    this._handlers = handlers;
    this.node.setAttribute('aria-label', `Job ${job.id}`);
    const close = el('button', 'yt-job-close jp-Button jp-mod-minimal', '×') as HTMLButtonElement;
    close.title = 'Close the job detail';
    close.setAttribute('aria-label', 'Close the job detail');
    close.onclick = () => handlers.onClose();
    this._title.append(this._heading, close);
    this._actionError.hidden = true;
    this._actionError.setAttribute('role', 'alert');
    this._rank.setAttribute('aria-label', 'Rank whose log is shown');
    this._rank.onchange = () => this._follow(Number(this._rank.value));
    this._log.setAttribute('role', 'log');
    this._log.tabIndex = 0;
    this._log.append(this._logText);
    const logHeader = el('div', 'yt-job-log-header');
    logHeader.append(el('span', 'yt-job-section-title', 'Log'), this._rank, this._logStatus);
    this._runs.setAttribute('aria-label', 'Runs');
    this.node.append(
      this._title,
      this._fields,
      this._actions,
      this._actionError,
      this._runs,
      logHeader,
      this._log
    );
    this.update(job);
    this._follow(this._rankValue());
  }

  get jobId(): number {
    return this._job.id;
  }

  /** Redraw from a fresher model; the log keeps streaming. */
  update(job: IJob): void {
    const ended =
      this._job !== undefined &&
      ACTIVE_STATES.has(this._job.state) &&
      !ACTIVE_STATES.has(job.state);
    this._job = job;
    this.node.dataset.job = String(job.id);
    this.node.dataset.state = job.state;
    this._heading.replaceChildren(
      el('span', 'yt-job-detail-name', `#${job.id} ${job.name}`),
      stateBadge(job.state)
    );
    this._heading.querySelector('.yt-job-state')?.classList.add('yt-job-detail-state');
    const devices = job.devices?.type
      ? `${job.devices.count ?? 0} × ${job.devices.type}` +
        (job.devices.visible?.length ? ` (visible ${plain(job.devices.visible)})` : '')
      : 'none';
    this._fields.replaceChildren(
      field('state', 'State', job.state),
      ...(job.reason ? [field('reason', 'Reason', job.reason)] : []),
      ...(job.state === 'queued' && job.position
        ? [field('position', 'Queue position', job.position)]
        : []),
      field('vc', 'VC', job.vc),
      field('user', 'User', job.user),
      field('exit_code', 'Exit code', job.exit_code),
      field('attempts', 'Attempts', job.attempts),
      field('created', 'Submitted', timeText(job.created)),
      field('started', 'Started', timeText(job.started)),
      field('finished', 'Finished', timeText(job.finished)),
      field('hosts', 'Hosts', job.hosts),
      field('ports', 'Ports', job.ports),
      field('devices', 'Devices', devices),
      field('access', 'Access', job.access),
      field('outputs', 'Outputs', job.outputs_path)
    );
    this._renderActions(job);
    this._renderRuns(job);
    this._renderRanks(job);
    if (ended && this._logState !== 'live') {
      this._follow(this._rankValue()); // the stream had stopped early: read the end
    }
  }

  /** Stop the log stream (the detail is closed or the panel hidden/disposed). */
  dispose(): void {
    this._abort?.abort();
    this._abort = null;
    this.node.remove();
  }

  /** Pause (panel hidden) and resume (shown again) the log stream. */
  pause(): void {
    this._abort?.abort();
    this._abort = null;
  }

  resume(): void {
    if (!this._abort) {
      this._follow(this._rankValue());
    }
  }

  private _button(
    cls: string,
    text: string,
    help: string,
    onclick: () => unknown
  ): HTMLButtonElement {
    const button = el('button', `${cls} jp-Button jp-mod-styled`, text) as HTMLButtonElement;
    button.type = 'button';
    button.title = help;
    button.setAttribute('aria-label', help);
    button.onclick = async () => {
      button.disabled = true;
      this._actionError.hidden = true;
      try {
        await onclick();
      } catch (error) {
        this._actionError.textContent = error instanceof Error ? error.message : String(error);
        this._actionError.hidden = false;
      } finally {
        button.disabled = false;
      }
    };
    return button;
  }

  private _renderActions(job: IJob): void {
    const buttons: HTMLElement[] = [];
    if (ACTIVE_STATES.has(job.state)) {
      buttons.push(
        this._button('yt-job-cancel jp-mod-warn', 'Cancel', `Cancel job ${job.id}`, async () => {
          this.update({ ...this._job, ...(await cancelJob(job.id)) });
          this._handlers.onChanged();
        })
      );
    }
    if (RETRYABLE_STATES.has(job.state)) {
      buttons.push(
        this._button('yt-job-retry', 'Retry', `Queue job ${job.id} again`, async () => {
          this.update({ ...this._job, ...(await retryJob(job.id)) });
          this._follow(this._rankValue());
          this._handlers.onChanged();
        })
      );
    }
    buttons.push(
      this._button('yt-job-clone', 'Clone', `Submit a copy of job ${job.id}`, () =>
        this._handlers.onClone(job.spec)
      ),
      this._button(
        'yt-job-tensorboard',
        'TensorBoard',
        `Open TensorBoard on job ${job.id}'s outputs`,
        () => window.open(tensorboardUrl(job.id), '_blank', 'noopener')
      )
    );
    this._actions.replaceChildren(...buttons);
  }

  private _renderRuns(job: IJob): void {
    for (const id of job.runs) {
      if (this._runNodes.has(id)) {
        continue;
      }
      const row = el('div', 'yt-job-run');
      row.dataset.run = String(id);
      const toggle = el(
        'button',
        'yt-job-run-toggle jp-Button jp-mod-minimal',
        `Run ${id}`
      ) as HTMLButtonElement;
      toggle.type = 'button';
      toggle.setAttribute('aria-expanded', 'false');
      toggle.title = `Show the ledger record of run ${id}`;
      const record = el('pre', 'yt-job-run-record');
      record.hidden = true;
      toggle.onclick = async () => {
        const open = toggle.getAttribute('aria-expanded') !== 'true';
        toggle.setAttribute('aria-expanded', String(open));
        record.hidden = !open;
        if (open) {
          try {
            record.textContent = runSummary(await fetchRun(id));
          } catch (error) {
            record.textContent = error instanceof Error ? error.message : String(error);
          }
        }
      };
      row.append(toggle, record);
      this._runNodes.set(id, row);
      this._runs.append(row);
    }
    if (!this._runs.firstChild) {
      this._runs.append(el('div', 'yt-empty yt-job-runs-empty', 'No runs yet.'));
    } else if (job.runs.length) {
      this._runs.querySelector('.yt-job-runs-empty')?.remove();
    }
  }

  private _renderRanks(job: IJob): void {
    const ranks = Array.from(new Set([0, ...(job.ranks ?? [])])).sort((a, b) => a - b);
    const have = Array.from(this._rank.options).map(o => Number(o.value));
    if (have.join() === ranks.join()) {
      return;
    }
    const current = this._rank.value;
    this._rank.replaceChildren(
      ...ranks.map(r => {
        const option = el('option', '', `rank ${r}`) as HTMLOptionElement;
        option.value = String(r);
        return option;
      })
    );
    this._rank.value = ranks.map(String).includes(current) ? current : '0';
  }

  private _rankValue(): number {
    return Number(this._rank.value || 0);
  }

  /** (Re)start streaming `rank`'s log into the <pre>, aborting any earlier stream. */
  private _follow(rank: number): void {
    this._abort?.abort();
    const abort = new AbortController();
    this._abort = abort;
    this._logText.data = '';
    this._setLogState('live', `following rank ${rank}…`);
    const id = this._job.id;
    followLog(
      id,
      rank,
      abort.signal,
      text => this._append(text),
      () => ACTIVE_STATES.has(this._job.state)
    )
      .then(() => {
        if (!abort.signal.aborted) {
          this._setLogState(
            'done',
            this._logText.length ? `rank ${rank}: end of log` : `rank ${rank}: no output`
          );
        }
      })
      .catch(error => {
        if (!abort.signal.aborted) {
          this._setLogState('error', error instanceof Error ? error.message : String(error));
        }
      })
      .finally(() => {
        if (this._abort === abort) {
          this._abort = null;
        }
      });
  }

  private _setLogState(state: 'live' | 'done' | 'error', text: string): void {
    this._logState = state;
    this._log.dataset.follow = state;
    this._logStatus.textContent = text;
  }

  /** Append, keeping the view at the bottom when it was there (autoscroll). */
  private _append(text: string): void {
    if (!text) {
      return;
    }
    const log = this._log;
    const atBottom = log.scrollHeight - log.scrollTop - log.clientHeight < 24;
    this._logText.appendData(text);
    if (this._logText.length > LOG_LIMIT) {
      this._logText.deleteData(0, this._logText.length - LOG_LIMIT);
    }
    if (atBottom) {
      log.scrollTop = log.scrollHeight;
    }
  }

  private _job!: IJob;
  private _handlers: {
    onClose: () => void;
    onClone: (spec: Record<string, unknown>) => void;
    onChanged: () => void;
  };
  private _abort: AbortController | null = null;
  private _logState: 'live' | 'done' | 'error' = 'live';
  private _title = el('div', 'yt-job-detail-title');
  private _heading = el('div', 'yt-job-detail-heading');
  private _fields = el('div', 'yt-job-fields');
  private _actions = el('div', 'yt-job-actions');
  private _actionError = el('div', 'yt-error yt-job-action-error');
  private _runs = el('div', 'yt-job-runs');
  private _runNodes = new Map<number, HTMLElement>();
  private _rank = el('select', 'yt-job-rank-select') as HTMLSelectElement;
  private _logStatus = el('span', 'yt-job-log-status');
  private _log = el('pre', 'yt-job-log');
  private _logText = document.createTextNode('');
}
