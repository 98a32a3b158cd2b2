// yitong-lab: the "Yitong" sidebar (a launcher and status summary, panel.ts) and the main-area
// views (views.ts) with their commands, launcher cards, layout restoration and deep links:
// `<lab URL>?yt=jobs`, `?yt=job/42`, `?yt=form` (`?yt=form/42` clones job 42), `?yt=datasets`,
// `?yt=vc/vision`, `?yt=models` (`?yt=models/<vc>`), `?yt=experiments`, `?yt=experiment/7` open that tab
// (docs/jobs.md, docs/models.md, docs/hpo.md).
import {
  ILayoutRestorer,
  IRouter,
  JupyterFrontEnd,
  JupyterFrontEndPlugin
} from '@jupyterlab/application';
import { MainAreaWidget, WidgetTracker } from '@jupyterlab/apputils';
import { ILauncher } from '@jupyterlab/launcher';

import { datasetsIcon, experimentsIcon, jobsIcon, yitongIcon } from './icon';
import { ModelsView, modelsIcon } from './models';
import { YitongPanel } from './panel';
import { reclaimPlugin } from './reclaim';
import {
  DatasetsView,
  ExperimentView,
  ExperimentsView,
  JobFormView,
  JobView,
  JobsView,
  VCView,
  ViewName,
  VIEWS,
  YitongView,
  parseRoute
} from './views';

/** The commands (also the launcher cards' and the deep links' targets). */
export const COMMANDS = {
  open: 'yitong:open',
  jobs: 'yitong:open-jobs',
  job: 'yitong:open-job',
  form: 'yitong:open-job-form',
  datasets: 'yitong:open-datasets',
  vc: 'yitong:open-vc',
  models: 'yitong:open-models',
  experiments: 'yitong:open-experiments',
  experiment: 'yitong:open-experiment',
  route: 'yitong:route'
};

const ICONS: Record<ViewName, typeof yitongIcon> = {
  jobs: jobsIcon,
  job: jobsIcon,
  form: jobsIcon,
  datasets: datasetsIcon,
  vc: yitongIcon,
  models: modelsIcon,
  experiments: experimentsIcon,
  experiment: experimentsIcon
};

const plugin: JupyterFrontEndPlugin<void> = {
  id: 'yitong-lab:panel',
  description:
    'Yitong: the sidebar and the Jobs, Job, job form, Datasets, VC, Models and Experiments tabs.',
  autoStart: true,
  optional: [ILayoutRestorer, ILauncher, IRouter],
  activate: (
    app: JupyterFrontEnd,
    restorer: ILayoutRestorer | null,
    launcher: ILauncher | null,
    router: IRouter | null
  ) => {
    const tracker = new WidgetTracker<MainAreaWidget<YitongView>>({ namespace: 'yitong' });
    const key = (view: string, arg: string) => `${view}/${arg}`;

    const open = (view: ViewName, arg = ''): MainAreaWidget<YitongView> => {
      const existing = tracker.find(w => key(w.content.view, w.content.arg) === key(view, arg));
      if (existing) {
        app.shell.activateById(existing.id);
        return existing;
      }
      const actions = { open: (v: ViewName, a?: string) => void open(v, a) };
      const close = () => widget.dispose();
      const content =
        view === 'jobs'
          ? new JobsView(actions)
          : view === 'job'
            ? new JobView(Number(arg), actions, close)
            : view === 'form'
              ? new JobFormView(arg, actions, close)
              : view === 'datasets'
                ? new DatasetsView()
                : view === 'models'
                  ? new ModelsView(arg)
                  : view === 'experiments'
                    ? new ExperimentsView(actions)
                    : view === 'experiment'
                      ? new ExperimentView(Number(arg), actions)
                      : new VCView(arg, actions);
      const widget: MainAreaWidget<YitongView> = new MainAreaWidget({ content });
      widget.id = `yitong-${view}-${arg || 'main'}`.replace(/[^A-Za-z0-9_-]/g, '-');
      widget.title.icon = ICONS[view];
      widget.title.label = content.title.label;
      widget.title.closable = true;
      content.title.changed.connect(() => (widget.title.label = content.title.label));
      void tracker.add(widget);
      app.shell.add(widget, 'main');
      app.shell.activateById(widget.id);
      return widget;
    };

    const text = (value: unknown) => (value === undefined || value === null ? '' : String(value));
    app.commands.addCommand(COMMANDS.open, {
      label: 'Open a Yitong view',
      execute: args => {
        const view = text(args.view) as ViewName;
        if (VIEWS.includes(view)) {
          open(view, text(args.arg));
        }
      }
    });
    app.commands.addCommand(COMMANDS.jobs, {
      label: 'Jobs',
      caption: 'The jobs you can see: queue, state, logs',
      icon: jobsIcon,
      execute: () => open('jobs')
    });
    app.commands.addCommand(COMMANDS.job, {
      label: args => (args.id ? `Job ${args.id}` : 'Open a job'),
      execute: args => {
        if (/^\d+$/.test(text(args.id))) {
          open('job', text(args.id));
        }
      }
    });
    app.commands.addCommand(COMMANDS.form, {
      label: args => (args.clone ? `Clone job ${args.clone}` : 'New job'),
      icon: jobsIcon,
      execute: args => open('form', /^\d+$/.test(text(args.clone)) ? text(args.clone) : '')
    });
    app.commands.addCommand(COMMANDS.datasets, {
      label: 'Datasets',
      caption: 'Datasets, their versions, diffs and uploads',
      icon: datasetsIcon,
      execute: () => open('datasets')
    });
    app.commands.addCommand(COMMANDS.vc, {
      label: args => (args.name ? `VC ${args.name}` : 'Open a VC'),
      icon: yitongIcon,
      execute: args => {
        if (text(args.name)) {
          open('vc', text(args.name));
        }
      }
    });

    app.commands.addCommand(COMMANDS.models, {
      label: 'Models',
      caption: 'Models, their versions, lineage and endpoints; try an endpoint',
      icon: modelsIcon,
      execute: args => open('models', /^[a-z0-9-]{1,32}$/.test(text(args.vc)) ? text(args.vc) : '')
    });
    app.commands.addCommand(COMMANDS.experiments, {
      label: 'Experiments',
      caption: 'Hyperparameter searches: trials, live charts, parameter importance',
      icon: experimentsIcon,
      execute: () => open('experiments')
    });
    app.commands.addCommand(COMMANDS.experiment, {
      label: args => (args.id ? `Experiment ${args.id}` : 'Open an experiment'),
      icon: experimentsIcon,
      execute: args => {
        if (/^\d+$/.test(text(args.id))) {
          open('experiment', text(args.id));
        }
      }
    });

    const panel = new YitongPanel({
      openJobs: () => open('jobs'),
      openForm: () => open('form'),
      openDatasets: () => open('datasets'),
      openExperiments: () => open('experiments'),
      openVC: name => open('vc', name)
    });
    app.shell.add(panel, 'left', { rank: 650 });
    if (restorer) {
      restorer.add(panel, panel.id);
      void restorer.restore(tracker, {
        command: COMMANDS.open,
        args: w => ({ view: w.content.view, arg: w.content.arg }),
        name: w => key(w.content.view, w.content.arg)
      });
    }
    void panel.refresh();

    if (launcher) {
      launcher.add({ command: COMMANDS.jobs, category: 'Yitong', rank: 1 });
      launcher.add({ command: COMMANDS.datasets, category: 'Yitong', rank: 2 });
      launcher.add({ command: COMMANDS.models, category: 'Yitong', rank: 3 });
      launcher.add({ command: COMMANDS.experiments, category: 'Yitong', rank: 4 });
    }

    // The page's own deep link, read once the layout is restored: JupyterLab's router may route
    // the first URL before or after this plugin registers its pattern (it raced under load).
    const first = parseRoute(new URLSearchParams(window.location.search).get('yt'));
    if (first) {
      void app.restored.then(() => open(first[0], first[1]));
    }
    if (router) {
      app.commands.addCommand(COMMANDS.route, {
        execute: args => {
          const search = text(args.search);
          const route = parseRoute(new URLSearchParams(search).get('yt'));
          if (route) {
            void app.restored.then(() => open(route[0], route[1]));
          }
        }
      });
      router.register({ command: COMMANDS.route, pattern: /[?&]yt=/, rank: 20 });
    }
  }
};

export default [plugin, reclaimPlugin];
