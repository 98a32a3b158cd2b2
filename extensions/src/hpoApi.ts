// Experiment calls of the Experiments view: the platform's /experiments routes through
// yitong/api/ (the server extension adds the server's token). The detail and the list are polled
// with `If-None-Match`: an unchanged experiment answers 304 without a body (`null` here).
import { URLExt } from '@jupyterlab/coreutils';
import { ServerConnection } from '@jupyterlab/services';

import { ApiError, getJSON, requestJSON } from './api';
import { Direction, ITrialRow } from './hpoCharts';

/** An experiment as listed (`GET /experiments`); the detail adds `trials` and `best_so_far`. */
export interface IExperiment {
  id: number;
  name: string;
  vc: string;
  user: string;
  state: 'running' | 'stopped' | 'done' | string;
  reason: string;
  created: string;
  finished: string | null;
  config: {
    objective: { metric: string; direction: Direction };
    max_trials: number;
    concurrency: number;
    tuner: { name: string };
    assessor?: { name: string } | null;
    space: Record<string, unknown>;
  };
  counts: Record<string, number>;
  best: { number: number; value: number; params: Record<string, unknown>; job_id: number } | null;
  trials?: ITrialRow[];
  best_so_far?: (number | null)[];
}

/** Points of each trial's intermediate curve the view asks for (the service thins longer ones). */
export const CURVE_POINTS = 200;

/** A conditional GET: `{ data, etag }`, or `null` when the answer has not changed (304). */
export async function getIfChanged<T>(
  path: string,
  etag: string,
  signal?: AbortSignal
): Promise<{ data: T; etag: string } | null> {
  const settings = ServerConnection.makeSettings();
  const url = URLExt.join(settings.baseUrl, path);
  const headers: Record<string, string> = etag ? { 'If-None-Match': etag } : {};
  let response: Response;
  try {
    response = await ServerConnection.makeRequest(
      url,
      { method: 'GET', headers, cache: 'no-store', signal },
      settings
    );
  } catch (error) {
    throw new ApiError(`cannot reach this server: ${String(error)}`, 0, true);
  }
  if (response.status === 304) {
    return null;
  }
  const text = await response.text();
  let data: unknown = null;
  try {
    data = text ? JSON.parse(text) : null;
  } catch {
    data = null;
  }
  if (!response.ok) {
    const detail = (data as { detail?: unknown } | null)?.detail;
    throw new ApiError(
      typeof detail === 'string' ? detail : `the platform API answered HTTP ${response.status}`,
      response.status,
      response.status >= 502
    );
  }
  return { data: data as T, etag: response.headers.get('ETag') ?? '' };
}

export const experimentPath = (id: number): string =>
  `yitong/api/experiments/${id}?points=${CURVE_POINTS}`;

export const EXPERIMENTS_PATH = 'yitong/api/experiments';

export const fetchImportance = (id: number): Promise<Record<string, number>> =>
  getJSON<{ importance: Record<string, number> }>(`yitong/api/experiments/${id}/importance`).then(
    r => r.importance
  );

export const stopExperiment = (id: number): Promise<IExperiment> =>
  requestJSON<IExperiment>('POST', `yitong/api/experiments/${id}/stop`);

export const resumeExperiment = (id: number): Promise<IExperiment> =>
  requestJSON<IExperiment>('POST', `yitong/api/experiments/${id}/resume`);
