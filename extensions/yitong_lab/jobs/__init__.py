"""Jobs from Python: the job and run calls are methods of :class:`~yitong_lab.client.Client`
(:mod:`yitong_lab.jobs.sdk`); :mod:`yitong_lab.jobs.code` records which code a job runs,
:mod:`yitong_lab.jobs.cell` turns a notebook cell into a job, :mod:`yitong_lab.jobs.follow`
watches one until it ends. Metrics: :func:`yitong_lab.log_metrics`.

>>> from yitong_lab.client import Client
>>> c = Client()                                                        # doctest: +SKIP
>>> job = c.submit_job(open("train.yaml").read(), directory=".")        # doctest: +SKIP
>>> c.job(job["id"])["state"], c.run(c.job(job["id"])["runs"][-1])["metrics"]  # doctest: +SKIP
"""
