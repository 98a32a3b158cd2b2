"""A tiny distributed check: every rank all-reduces its rank (gloo) and rank 0 prints the sum."""

import os

import torch
import torch.distributed as dist

dist.init_process_group("gloo")
t = torch.tensor([float(dist.get_rank())])
dist.all_reduce(t)
world = dist.get_world_size()
assert t.item() == world * (world - 1) / 2, t
if dist.get_rank() == 0:
    print(f"allreduce ok world={world} sum={t.item():g} backend={os.environ.get('EXPECT_BACKEND', 'gloo')}")
dist.destroy_process_group()
