// Calls to the server extension's routes (yitong/api/<path> forwards to the platform API).
import { URLExt } from '@jupyterlab/coreutils';
import { ServerConnection } from '@jupyterlab/services';

export type Resources = Record<string, number>;

export interface IVC {
  name: string;
  description: string;
  quota: Resources;
  used: Resources;
  free: Resources;
  groups: string[];
  profiles: string[];
  user_caps: Resources;
}

export interface IApiInfo {
  configured: boolean;
  vc: string | null;
  profile: string | null;
}

/** `method <baseUrl>/<path>` with an optional body (JSON-encoded, or sent as typed when a
 * `contentType` other than JSON is given, e.g. a YAML document); resolves to the decoded JSON
 * answer (null for 204) and rejects with the service's `detail` sentence on failure. */
export async function requestJSON<T>(
  method: string,
  path: string,
  body?: unknown,
  contentType = 'application/json'
): Promise<T> {
  const settings = ServerConnection.makeSettings();
  const url = URLExt.join(settings.baseUrl, path);
  const init: RequestInit = { method };
  if (body !== undefined) {
    init.body = contentType === 'application/json' ? JSON.stringify(body) : String(body);
    init.headers = { 'Content-Type': contentType };
  }
  let response: Response;
  try {
    response = await ServerConnection.makeRequest(url, init, settings);
  } catch (error) {
    throw new Error(`cannot reach this server: ${String(error)}`);
  }
  const text = await response.text();
  let data: any = null;
  try {
    data = text ? JSON.parse(text) : null;
  } catch {
    data = null;
  }
  if (!response.ok) {
    const detail = typeof data?.detail === 'string' ? data.detail : data?.message;
    throw new Error(detail || `the platform API answered HTTP ${response.status}`);
  }
  return data as T;
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
