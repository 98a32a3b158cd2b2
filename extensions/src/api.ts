// Calls to the server extension's routes (yitong/api/<path> forwards to the platform API).
import { URLExt } from '@jupyterlab/coreutils';
import { ServerConnection } from '@jupyterlab/services';

import type { components } from './api/schema';

/** The REST models, generated from the service's OpenAPI document (`docs/generate.py`). */
export type Schemas = components['schemas'];

/** How often the views reload what may have changed (faster for active jobs: jobs.ts). */
export const REFRESH_MS = 15000;

export type Resources = Record<string, number>;

/** A VC as the platform answers it (`VCOut`, every field present in an answer). */
export type IVC = Required<Schemas['VCOut']>;

export interface IApiInfo {
  configured: boolean;
  vc: string | null;
  profile: string | null;
}

/** A failed call: `status` is 0 when nothing answered; `transient` when a retry may succeed
 * (no answer, or a gateway's 502/503/504 rather than the platform's own 503 sentence). */
export class ApiError extends Error {
  constructor(
    message: string,
    readonly status: number,
    readonly transient: boolean
  ) {
    super(message);
  }
}

/** `method <baseUrl>/<path>` with an optional body (JSON-encoded, or sent as typed when a
 * `contentType` other than JSON is given, e.g. a YAML document) and extra `headers`; resolves to
 * the decoded JSON answer (null for 204) and rejects with an `ApiError` carrying the service's
 * `detail` sentence (or a V2 server's `error`) on failure. */
export async function requestJSON<T>(
  method: string,
  path: string,
  body?: unknown,
  contentType = 'application/json',
  headers: Record<string, string> = {}
): Promise<T> {
  const settings = ServerConnection.makeSettings();
  const url = URLExt.join(settings.baseUrl, path);
  const init: RequestInit = { method, headers: { ...headers } };
  if (body !== undefined) {
    init.body = contentType === 'application/json' ? JSON.stringify(body) : String(body);
    init.headers = { ...headers, 'Content-Type': contentType };
  }
  let response: Response;
  try {
    response = await ServerConnection.makeRequest(url, init, settings);
  } catch (error) {
    throw new ApiError(`cannot reach this server: ${String(error)}`, 0, true);
  }
  const text = await response.text();
  let data: { detail?: unknown; error?: unknown; message?: string } | null = null;
  try {
    data = text ? JSON.parse(text) : null;
  } catch {
    data = null;
  }
  if (!response.ok) {
    const said = typeof data?.detail === 'string';
    // the platform's `detail`; an Open Inference Protocol server's `error` (endpoints' v2 routes)
    const v2 = typeof data?.error === 'string' ? (data.error as string) : undefined;
    const detail = said ? (data?.detail as string) : (v2 ?? data?.message);
    const status = response.status;
    const transient = status === 502 || status === 504 || (status === 503 && !said && !v2);
    throw new ApiError(detail || `the platform API answered HTTP ${status}`, status, transient);
  }
  return data as T;
}

/** A key for one create: a random UUID (`crypto.randomUUID` needs a secure context; on plain
 * http it is 16 random bytes from `crypto.getRandomValues`, in hex). */
export function newIdempotencyKey(): string {
  const c = window.crypto;
  if (typeof c.randomUUID === 'function') {
    return c.randomUUID();
  }
  return Array.from(c.getRandomValues(new Uint8Array(16)), b =>
    b.toString(16).padStart(2, '0')
  ).join('');
}

/** Tries of a create: a dropped connection or a gateway error is retried with the same key. */
export const CREATE_TRIES = 3;

/** `POST` a create (a job submit) with one `Idempotency-Key` for all its tries: retried after a
 * dropped connection or a 502/503/504 (at most `CREATE_TRIES` times, 0.5 s then 1 s apart), so
 * the platform makes one job however often the request arrives; a refusal is not retried. */
export async function createJSON<T>(
  path: string,
  body: unknown,
  contentType = 'application/json'
): Promise<T> {
  const headers = { 'Idempotency-Key': newIdempotencyKey() };
  for (let attempt = 1; ; attempt++) {
    try {
      return await requestJSON<T>('POST', path, body, contentType, headers);
    } catch (error) {
      if (attempt >= CREATE_TRIES || !(error instanceof ApiError && error.transient)) {
        throw error;
      }
    }
    await new Promise(resolve => setTimeout(resolve, 500 * 2 ** (attempt - 1)));
  }
}

/** GET `<baseUrl>/<path>`; rejects with the service's `detail` sentence on failure. */
export function getJSON<T>(path: string): Promise<T> {
  return requestJSON<T>('GET', path);
}

export const fetchVCs = (): Promise<IVC[]> => getJSON<IVC[]>('yitong/api/vcs');
export const fetchInfo = (): Promise<IApiInfo> => getJSON<IApiInfo>('yitong/api-info');

const MEMORY_UNITS = ['B', 'KiB', 'MiB', 'GiB', 'TiB', 'PiB'];

function num(value: number): string {
  return String(Math.round(value * 100) / 100);
}

/** `2 GiB` for memory, `1.5` for cpu, `2` for devices (as the `yt` CLI prints). */
export function formatAmount(resource: string, value: number | undefined): string {
  if (value === undefined || value === null) {
    return '-';
  }
  if (resource !== 'memory') {
    return num(value);
  }
  let amount = value;
  let unit = 0;
  while (Math.abs(amount) >= 1024 && unit < MEMORY_UNITS.length - 1) {
    amount /= 1024;
    unit += 1;
  }
  return `${num(amount)} ${MEMORY_UNITS[unit]}`;
}

/** cpu, memory first, then devices by name. */
export function resourceNames(vc: IVC): string[] {
  const names = new Set([
    ...Object.keys(vc.quota || {}),
    ...Object.keys(vc.used || {}),
    ...Object.keys(vc.free || {})
  ]);
  const first = ['cpu', 'memory'].filter(n => names.has(n));
  const rest = [...names].filter(n => !first.includes(n)).sort();
  return [...first, ...rest];
}
