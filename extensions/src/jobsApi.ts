// Job calls of the panel: the platform's /jobs and /runs routes through yitong/api/ (the server
// extension adds the server's token), the live per-rank log stream, and the TensorBoard link.
import { URLExt } from '@jupyterlab/coreutils';
import { ServerConnection } from '@jupyterlab/services';

import { Schemas, createJSON, getJSON, requestJSON } from './api';

export type JobState = Schemas['JobOut']['state'];

/** States in which a job may still change by itself (the list polls while any job is in one). */
export const ACTIVE_STATES: ReadonlySet<string> = new Set(['queued', 'admitted', 'running']);
/** States a job can be retried from (`POST /jobs/{id}/retry`). */
export const RETRYABLE_STATES: ReadonlySet<string> = new Set(['failed', 'cancelled', 'preempted']);

/** A job as listed; the detail (`GET /jobs/{id}`) adds `access`, `ranks` and `outputs_path`.
 * The types are generated from the service's OpenAPI document (src/api/schema.d.ts). */
export type IJob = Schemas['JobOut'] &
  Partial<Pick<Schemas['JobDetail'], 'access' | 'ranks' | 'outputs_path'>>;

/** The ledger record of one attempt (`GET /runs/{id}`). */
export type IRun = Schemas['RunOut'];

export const fetchJobs = (): Promise<IJob[]> => getJSON<IJob[]>('yitong/api/jobs');

export const fetchJob = (id: number): Promise<IJob> => getJSON<IJob>(`yitong/api/jobs/${id}`);

export const fetchRun = (id: number): Promise<IRun> => getJSON<IRun>(`yitong/api/runs/${id}`);

export const cancelJob = (id: number): Promise<IJob> =>
  requestJSON<IJob>('POST', `yitong/api/jobs/${id}/cancel`);

export const retryJob = (id: number): Promise<IJob> =>
  requestJSON<IJob>('POST', `yitong/api/jobs/${id}/retry`);

/** Submit a spec given as fields (sent as JSON). Each submit carries its own `Idempotency-Key`,
 * reused on its retries (`createJSON`): a submit retried after a dropped connection makes one job. */
export const submitSpec = (spec: Record<string, unknown>): Promise<IJob> =>
  createJSON<IJob>('yitong/api/jobs', spec);

/** Submit a spec document as typed (YAML, or JSON, which is YAML too); the service parses it and
 * names the line of a syntax error. Keyed and retried as `submitSpec`. */
export function submitYAML(text: string): Promise<IJob> {
  return createJSON<IJob>('yitong/api/jobs', text, 'application/yaml');
}

/** Where the server extension starts TensorBoard on the job's outputs (a redirect). */
export function tensorboardUrl(id: number): string {
  return URLExt.join(
    ServerConnection.makeSettings().baseUrl,
    'yitong/jobs',
    String(id),
    'tensorboard'
  );
}

/**
 * Follow one rank's log: `GET logs?rank=N&follow=1&offset=K`, read chunk by chunk, `onText` per
 * decoded chunk. The service ends the stream when the job ends; a stream cut earlier (a proxy
 * timeout) is resumed from the byte offset reached while `keepGoing()` says the job is active.
 * Resolves when the log is complete or `signal` aborts; rejects with the service's sentence.
 */
export async function followLog(
  id: number,
  rank: number,
  signal: AbortSignal,
  onText: (text: string) => void,
  keepGoing: () => boolean
): Promise<void> {
  const settings = ServerConnection.makeSettings();
  let offset = 0;
  for (;;) {
    const url = URLExt.join(
      settings.baseUrl,
      `yitong/api/jobs/${id}/logs?rank=${rank}&follow=1&offset=${offset}`
    );
    let response: Response;
    try {
      response = await ServerConnection.makeRequest(url, { method: 'GET', signal }, settings);
    } catch (error) {
      if (signal.aborted) {
        return;
      }
      throw new Error(`cannot reach this server: ${String(error)}`);
    }
    // a log is text/plain; JSON here is an error model (from the service or the forwarder)
    const json = (response.headers.get('Content-Type') || '').includes('json');
    if (!response.ok || json) {
      const text = await response.text();
      let detail = '';
      try {
        detail = JSON.parse(text).detail;
      } catch {
        detail = '';
      }
      throw new Error(detail || `the log answered HTTP ${response.status}`);
    }
    const decoder = new TextDecoder();
    try {
      if (response.body) {
        const reader = response.body.getReader();
        for (;;) {
          const { done, value } = await reader.read();
          if (done) {
            break;
          }
          offset += value.byteLength;
          onText(decoder.decode(value, { stream: true }));
        }
      } else {
        const whole = new Uint8Array(await response.arrayBuffer());
        offset += whole.byteLength;
        onText(decoder.decode(whole, { stream: true }));
      }
    } catch {
      if (signal.aborted) {
        return;
      }
      // the connection dropped mid-stream: resume below
    }
    const tail = decoder.decode();
    if (tail) {
      onText(tail);
    }
    if (signal.aborted || !keepGoing()) {
      return;
    }
    await new Promise(resolve => setTimeout(resolve, 1000));
  }
}

/** A service timestamp (ISO, UTC; a missing zone is read as UTC) in milliseconds, or NaN. */
export function parseTime(value: string | null | undefined): number {
  if (!value) {
    return NaN;
  }
  return Date.parse(/[zZ]|[+-]\d\d:?\d\d$/.test(value) ? value : `${value}Z`);
}

/** `42s`, `5m`, `3h`, `2d`: how long ago `value` was (`now` for tests). */
export function ageText(value: string | null | undefined, now = Date.now()): string {
  const then = parseTime(value);
  if (isNaN(then)) {
    return '-';
  }
  const seconds = Math.max(0, Math.round((now - then) / 1000));
  if (seconds < 60) {
    return `${seconds}s`;
  }
  if (seconds < 3600) {
    return `${Math.floor(seconds / 60)}m`;
  }
  if (seconds < 86400) {
    return `${Math.floor(seconds / 3600)}h`;
  }
  return `${Math.floor(seconds / 86400)}d`;
}

/** A timestamp in the browser's locale, or `-`. */
export function timeText(value: string | null | undefined): string {
  const then = parseTime(value);
  return isNaN(then) ? '-' : new Date(then).toLocaleString();
}
