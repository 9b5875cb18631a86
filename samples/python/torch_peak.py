# A PyTorch CPU MLP whose training loop holds more heap than `import torch` leaves behind
# (~65 MiB): a wide batch (16,384 rows) on a small net (4 -> 1024 -> 2), so each step's
# activations and gradients are 64 MiB tensors while its matrix products stay cheap on Debian's
# generic BLAS (~0.4 s of CPU a step). The heap peaks in loss.backward(): the ReLU's output, made
# on the forward line, and the backward pass's gradients of 64 MiB each are live at once.
# Line numbers are checked by the tests: the forward line is 23, the backward line 24.
import sys

import torch

STEPS = int(sys.argv[1]) if len(sys.argv) > 1 else 3
BATCH, IN, HIDDEN, OUT = 16384, 4, 1024, 2
torch.manual_seed(0)
torch.set_num_threads(1)  # comparable runs on a shared machine
model = torch.nn.Sequential(torch.nn.Linear(IN, HIDDEN), torch.nn.ReLU(), torch.nn.Linear(HIDDEN, OUT))
opt = torch.optim.SGD(model.parameters(), lr=0.01)
loss_fn = torch.nn.CrossEntropyLoss()
x = torch.randn(BATCH, IN)
y = torch.randint(0, OUT, (BATCH,))

for step in range(STEPS):
    opt.zero_grad()
    loss = loss_fn(model(x), y)
    loss.backward()
    opt.step()
print(f"torch_peak: {STEPS} steps, loss {loss.item():.4f}", file=sys.stderr)
