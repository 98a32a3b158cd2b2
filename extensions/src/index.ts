// yitong-lab: the "Yitong" left sidebar panel (VCs with quota, used, free; jobs; datasets).
import { ILayoutRestorer, JupyterFrontEnd, JupyterFrontEndPlugin } from '@jupyterlab/application';

import { YitongPanel } from './panel';

const plugin: JupyterFrontEndPlugin<void> = {
  id: 'yitong-lab:panel',
  description:
    'The Yitong sidebar: your virtual clusters, their quotas and usage, jobs and datasets.',
  autoStart: true,
  optional: [ILayoutRestorer],
  activate: (app: JupyterFrontEnd, restorer: ILayoutRestorer | null) => {
    const panel = new YitongPanel();
    app.shell.add(panel, 'left', { rank: 650 });
    if (restorer) {
      restorer.add(panel, panel.id);
    }
    void panel.refresh();
  }
};

export default plugin;
