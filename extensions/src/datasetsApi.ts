// Dataset calls of the panel: the platform routes through yitong/api/ and the server
// extension's browser-upload routes (yitong/datasets/uploads, yitong/tasks).
import { URLExt } from '@jupyterlab/coreutils';
import { ServerConnection } from '@jupyterlab/services';

import { getJSON, requestJSON } from './api';
import type { Schemas } from './api';

/** A dataset version as the platform answers it (generated `VersionOut`). */
export type IVersion = Schemas['VersionOut'];

/** A dataset as the platform answers it (generated `DatasetOut`). */
export type IDataset = Schemas['DatasetOut'];

/** Two versions compared (generated `Diff`). */
export type IDiff = Schemas['Diff'];

export interface ITask {
  id: string;
  dataset: string;
  state: 'running' | 'done' | 'error';
  phase: string;
  done: number;
  total: number;
  version: number | null;
  unchanged: boolean;
  error: string | null;
}

/** `vision/mnist` -> `datasets/vision/mnist` with each part escaped. */
function datasetPath(dataset: string): string {
  return 'yitong/api/datasets/' + dataset.split('/').map(encodeURIComponent).join('/');
}

export const fetchDatasets = (): Promise<IDataset[]> => getJSON<IDataset[]>('yitong/api/datasets');

export const fetchVersions = (dataset: string): Promise<IVersion[]> =>
  getJSON<IVersion[]>(`${datasetPath(dataset)}/versions`);

export const fetchDiff = (dataset: string, from: number, to: number): Promise<IDiff> =>
  getJSON<IDiff>(`${datasetPath(dataset)}/diff?from=${from}&to=${to}`);

export async function materialize(dataset: string, version: number): Promise<string> {
  const answer = await requestJSON<{ path: string }>(
    'POST',
    `${datasetPath(dataset)}/versions/${version}/materialize`
  );
  return answer.path;
}

/** The folder-relative path of a picked file, without the picked folder's own name. */
export function relativePath(file: File): string {
  const full = (file as File & { webkitRelativePath?: string }).webkitRelativePath || file.name;
  const parts = full.split('/');
  return parts.length > 1 ? parts.slice(1).join('/') : full;
}

function xsrfToken(): string | null {
  const match = document.cookie.match('\\b_xsrf=([^;]*)\\b');
  return match ? decodeURIComponent(match[1]) : null;
}

/** PUT one file's bytes (XHR, for upload progress events). */
function putFile(
  uploadId: string,
  path: string,
  file: File,
  sent: (n: number) => void
): Promise<void> {
  const settings = ServerConnection.makeSettings();
  const url = URLExt.join(
    settings.baseUrl,
    'yitong/datasets/uploads',
    uploadId,
    'files',
    ...path.split('/').map(encodeURIComponent)
  );
  return new Promise((resolve, reject) => {
    const xhr = new XMLHttpRequest();
    xhr.open('PUT', url);
    if (settings.token) {
      xhr.setRequestHeader('Authorization', `token ${settings.token}`);
    }
    const xsrf = xsrfToken();
    if (xsrf) {
      xhr.setRequestHeader('X-XSRFToken', xsrf);
    }
    let reported = 0;
    xhr.upload.onprogress = event => {
      sent(event.loaded - reported);
      reported = event.loaded;
    };
    xhr.onload = () => {
      sent(file.size - reported);
      if (xhr.status >= 200 && xhr.status < 300) {
        resolve();
      } else {
        let detail = `uploading ${path} failed: HTTP ${xhr.status}`;
        try {
          detail = JSON.parse(xhr.responseText).detail || detail;
        } catch {
          // keep the generic sentence
        }
        reject(new Error(detail));
      }
    };
    xhr.onerror = () => reject(new Error(`uploading ${path} failed: the connection dropped`));
    xhr.send(file);
  });
}

/** Stream `files` into a staging upload (4 at a time), commit it, follow the commit's task.
 * `progress(phase, done, total)`: phase `send` while the browser sends bytes, then the
 * commit's phases (`hash`, `upload`). Resolves to the finished task. */
export async function uploadFolder(
  dataset: string,
  message: string,
  files: File[],
  progress: (phase: string, done: number, total: number) => void
): Promise<ITask> {
  const { id } = await requestJSON<{ id: string }>('POST', 'yitong/datasets/uploads', {
    dataset,
    message
  });
  const total = files.reduce((sum, f) => sum + f.size, 0);
  let done = 0;
  progress('send', 0, total);
  const queue = [...files];
  const worker = async (): Promise<void> => {
    for (let file = queue.shift(); file; file = queue.shift()) {
      await putFile(id, relativePath(file), file, n => {
        done += n;
        progress('send', done, total);
      });
    }
  };
  try {
    await Promise.all([worker(), worker(), worker(), worker()]);
  } catch (error) {
    void requestJSON('DELETE', `yitong/datasets/uploads/${id}`).catch(() => undefined);
    throw error;
  }
  const { task } = await requestJSON<{ task: string }>(
    'POST',
    `yitong/datasets/uploads/${id}/commit`
  );
  for (;;) {
    const state = await getJSON<ITask>(`yitong/tasks/${task}`);
    progress(state.phase, state.done, state.total);
    if (state.state !== 'running') {
      return state;
    }
    await new Promise(resolve => setTimeout(resolve, 300));
  }
}
