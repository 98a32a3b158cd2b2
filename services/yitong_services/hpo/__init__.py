"""Hyperparameter search: experiments whose trials are platform jobs (docs/hpo.md).

An Optuna engine replays the trials kept in our own tables; trial code reads its parameters and
reports metrics through NNI's file channel (so unchanged NNI trial code works) or ``yitong_lab.hpo``.
"""
