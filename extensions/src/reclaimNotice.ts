// The accelerator reclaim's warnings as JupyterLab notifications: pure helpers (tested by node,
// tests/extensions/test_reclaim_notice.py) for what to show and when; reclaim.ts polls
// `yitong/api/reclaim/warnings` (the server extension forwards it to the platform) and shows them.
import type { Schemas } from './api';

/** One pending warning (`GET /reclaim/warnings`; generated from the service's OpenAPI). */
export type IReclaimWarning = Schemas['ReclaimWarning'];

/** A warning's identity: a new warning of the same server (after it was used again) shows anew. */
export function warningKey(w: IReclaimWarning): string {
  return `${w.ref}@${w.warned_at}`;
}

/** "5 min", "45 s": how long until the stop. */
export function remaining(seconds: number): string {
  const s = Math.max(0, Math.round(seconds));
  if (s >= 120) {
    return `${Math.round(s / 60)} min`;
  }
  return `${s} s`;
}

/** The devices with their verb: "1 nvidia.com/gpu is", "2 nvidia.com/gpu are". */
export function devicesText(devices: Record<string, number>): string {
  const parts = Object.entries(devices).map(([kind, n]) => `${n} ${kind}`);
  const many = Object.values(devices).reduce((a, b) => a + b, 0) > 1;
  return parts.length ? `${parts.join(', ')} ${many ? 'are' : 'is'}` : 'accelerator is';
}

/** The notification's sentence (plain text: JupyterLab renders it as text, not markup; its
 * toasts cut a message at 140 characters, so it stays short). */
export function noticeText(w: IReclaimWarning, nowSeconds: number): string {
  const left = w.stop_at - nowSeconds;
  const when = left > 0 ? `in about ${remaining(left)}` : 'at the next check';
  return `This server's ${devicesText(w.devices)} idle: it will be stopped ${when} unless you use it (VC ${w.vc}).`;
}

/** The warnings not shown yet, and the keys to remember (only the pending ones, so the set stays small). */
export function toShow(
  warnings: IReclaimWarning[],
  shown: ReadonlySet<string>
): { fresh: IReclaimWarning[]; keep: Set<string> } {
  const keys = warnings.map(warningKey);
  return {
    fresh: warnings.filter((w, i) => !shown.has(keys[i])),
    keep: new Set(keys)
  };
}

/** The query for this server's own warnings (`?server=` only under JupyterHub, where its name is known). */
export function warningsPath(hubUser: string, hubServerName: string): string {
  const base = 'yitong/api/reclaim/warnings';
  return hubUser ? `${base}?server=${encodeURIComponent(hubServerName)}` : base;
}
