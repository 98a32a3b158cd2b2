// Model registry and endpoint calls of the Models view: the platform's /models and /endpoints
// routes through yitong/api/ (the server extension adds the server's token), and a V2 infer
// request through the platform's endpoint route (`/endpoints/{name}/v2/models/{name}/infer`).
import { getJSON, requestJSON } from './api';
import type { Schemas } from './api';
import type { IV2Request, IV2Response } from './inferRequest';

/** A model as the platform answers it (generated `ModelOut`). */
export type IModel = Schemas['ModelOut'];
/** A model version with its metadata, lineage and aliases (generated `ModelVersionOut`). */
export type IModelVersion = Schemas['ModelVersionOut'];
/** Versions' metrics side by side (generated `ModelComparison`); each of `versions` is
 * `{number, aliases, metrics: {name: value | null}}`. */
export type IComparison = Schemas['ModelComparison'];
/** An endpoint (generated `EndpointOut`); `state` is queued, starting, ready or failed. */
export type IEndpoint = Schemas['EndpointOut'];

/** `vision/iris` -> `yitong/api/models/vision/iris` with each part escaped. */
export function modelPath(model: string): string {
  return 'yitong/api/models/' + model.split('/').map(encodeURIComponent).join('/');
}

export const fetchModels = (vc?: string): Promise<IModel[]> =>
  getJSON<IModel[]>(`yitong/api/models${vc ? `?vc=${encodeURIComponent(vc)}` : ''}`);

export const fetchModelVersions = (model: string): Promise<IModelVersion[]> =>
  getJSON<IModelVersion[]>(`${modelPath(model)}/versions`);

/** The compare route over `refs` (every version when empty). */
export const fetchComparison = (model: string, refs: (number | string)[]): Promise<IComparison> =>
  getJSON<IComparison>(
    `${modelPath(model)}/compare` +
      (refs.length ? `?versions=${encodeURIComponent(refs.join(','))}` : '')
  );

export const fetchEndpoints = (): Promise<IEndpoint[]> =>
  getJSON<IEndpoint[]>('yitong/api/endpoints');

/** One endpoint: queued (the quota's reason), starting, ready (a roll under way in `reason`), failed. */
export const fetchEndpoint = (name: string): Promise<IEndpoint> =>
  getJSON<IEndpoint>(`yitong/api/endpoints/${encodeURIComponent(name)}`);

/** POST a V2 infer request to an endpoint (its `url`: `endpoints/<name>/v2/models/<name>`);
 * rejects with the sentence of the platform or the server (`detail`, or V2's `error`). */
export function infer(endpoint: IEndpoint, request: IV2Request): Promise<IV2Response> {
  const path = endpoint.url.split('/').map(encodeURIComponent).join('/');
  return requestJSON<IV2Response>('POST', `yitong/api/${path}/infer`, request);
}
