"""A small PyTorch CPU MLP training loop (~3 s uninstrumented on the project's 2-core machines).
One intra-op thread, so that runs on a shared machine are comparable. Exits 0 with a message on
stderr and does nothing else when torch cannot be imported: the harness checks that first."""
import sys
import time

try:
    import torch
except ImportError as e:  # the harness skips the workload; a direct run says why
    print(f"torch_mlp: torch not importable ({e})", file=sys.stderr)
    sys.exit(3)

STEPS = int(sys.argv[1]) if len(sys.argv) > 1 else 300
torch.manual_seed(0)
torch.set_num_threads(1)

model = torch.nn.Sequential(
    torch.nn.Linear(64, 128), torch.nn.ReLU(),
    torch.nn.Linear(128, 128), torch.nn.ReLU(),
    torch.nn.Linear(128, 10),
)
opt = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
loss_fn = torch.nn.CrossEntropyLoss()
x = torch.randn(4096, 64)
y = torch.randint(0, 10, (4096,))

start = time.perf_counter()
for step in range(STEPS):
    idx = torch.randint(0, x.shape[0], (64,))
    opt.zero_grad()
    loss = loss_fn(model(x[idx]), y[idx])
    loss.backward()
    opt.step()
print(f"torch_mlp: {STEPS} steps, final loss {loss.item():.4f}, "
      f"{time.perf_counter() - start:.2f} s in the loop", file=sys.stderr)
