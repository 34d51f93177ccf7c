"""A rank that ends on an uncaught Python error while its peers wait in a
collective: the job must end (no hang), with the error and the runtime's
message, not finalize collectively at exit."""

import numpy as np

import mesh.distributed as dist

m = dist.init_device_mesh("cpu", (-1,), mesh_dim_names=("x",))
if dist.get_rank() == 1:
    raise ValueError("rank 1 gives up")
x = np.ones(4, np.float32)
m.get_group("x").all_reduce(x)
print("all_reduce returned on a job with a dead rank")
