// Shows the accelerator reclaim's warning for this server as a JupyterLab notification
// (JupyterLab 4's Notification API), polling the platform through the server extension.
import { JupyterFrontEnd, JupyterFrontEndPlugin } from '@jupyterlab/application';
import { Notification } from '@jupyterlab/apputils';
import { PageConfig } from '@jupyterlab/coreutils';

import { getJSON } from './api';
import { IReclaimWarning, noticeText, toShow, warningKey, warningsPath } from './reclaimNotice';

/** How often to ask (the reclaim's own pass is a minute by default). */
export const RECLAIM_POLL_MS = 30000;

export const reclaimPlugin: JupyterFrontEndPlugin<void> = {
  id: 'yitong-lab:reclaim-notice',
  description: 'Notifies when the platform will stop this server to reclaim its idle accelerator.',
  autoStart: true,
  activate: (app: JupyterFrontEnd) => {
    const path = warningsPath(
      PageConfig.getOption('hubUser'),
      PageConfig.getOption('hubServerName')
    );
    let shown = new Set<string>();
    const ids = new Map<string, string>(); // warning key -> notification id
    const poll = async (): Promise<void> => {
      let warnings: IReclaimWarning[];
      try {
        warnings = (await getJSON<{ warnings: IReclaimWarning[] }>(path)).warnings;
      } catch {
        return; // no platform configured, or it is away: nothing to say
      }
      const { fresh, keep } = toShow(warnings, shown);
      for (const [key, id] of ids) {
        if (!keep.has(key)) {
          Notification.dismiss(id); // used again, or stopped: the warning no longer holds
          ids.delete(key);
        }
      }
      for (const w of fresh) {
        const id = Notification.warning(noticeText(w, Date.now() / 1000), { autoClose: false });
        ids.set(warningKey(w), id);
      }
      shown = keep;
    };
    void app.restored.then(() => {
      void poll();
      window.setInterval(() => void poll(), RECLAIM_POLL_MS);
    });
  }
};
