"""A short PyTorch training run on the GPU for tests/gpu/check.sh: a small MLP, a few hundred
steps. Prints one JSON line: steps, seconds, torch.cuda.max_memory_reserved/allocated."""
import json
import sys
import time

import torch


def main():
    steps = int(sys.argv[1]) if len(sys.argv) > 1 else 200
    dev = torch.device("cuda")
    model = torch.nn.Sequential(torch.nn.Linear(1024, 4096), torch.nn.ReLU(), torch.nn.Linear(4096, 4096),
                                torch.nn.ReLU(), torch.nn.Linear(4096, 10)).to(dev)
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    x = torch.randn(256, 1024, device=dev)
    y = torch.randint(0, 10, (256,), device=dev)
    torch.cuda.synchronize()
    t0 = time.perf_counter()
    for _ in range(steps):
        opt.zero_grad(set_to_none=True)
        loss = torch.nn.functional.cross_entropy(model(x), y)
        loss.backward()
        opt.step()
    torch.cuda.synchronize()
    seconds = time.perf_counter() - t0
    print(json.dumps({"steps": steps, "seconds": seconds,
                      "max_memory_reserved": torch.cuda.max_memory_reserved(),
                      "max_memory_allocated": torch.cuda.max_memory_allocated()}))


if __name__ == "__main__":
    main()
