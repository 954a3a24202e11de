#!/usr/bin/env python3
"""Workloads of the co-location runs (experiments/colocation/gpu_colocation.sh, docs/colocation.md).

Each one sets up (model to the GPU, inputs), runs a warm-up, then its
measured phase, marked for tracer (phase `warmup`, phase `generate`, phase
`end`: `replay --together` measures the recording's `generate` phase):

  gen     GPT-2 small generation, batch 1 (random fp16 weights, greedy, a fixed
          number of new tokens): launch-bound, the GPU mostly idle;
  batch   GPT-2 small forward passes at batch 8 (fp16): GEMM-bound bursts;
          the last one's logits (256 values) copied back;
  gemm    a loop of fp16 matrix products (8192²), a synchronization every 10,
          the product's first 256 values copied back;
  launch  the launch loop of examples/launch_loop.py: tiny element-wise
          kernels on one element, a synchronization every 100;
  mlp     a latency-sensitive loop: a 4-layer fp16 MLP (1024 wide) at batch 1,
          a synchronization after every step, 600 steps (issue 44): host-bound,
          its time mostly the host's between tiny kernels;
  cnn     a GPU-heavy tenant: training steps of a small CNN (four 3x3
          convolutions, 64-256 channels, on 32 images of 3x96x96, SGD), 12 steps,
          each ending with its loss copied back (cuDNN off by default: its
          convolutions run as PyTorch's own im2col + cuBLAS kernels, which
          replay is validated on; --cudnn turns it on).

Alone:   python3 colocation_workloads.py gen            (one measured phase)
Served:  python3 colocation_workloads.py gen --serve DIR
         sets up and warms up, writes DIR/ready.gen, then for each file
         DIR/go.gen.K (K = 1, 2, …) runs the measured phase once and writes
         its seconds to DIR/done.gen.K; DIR/quit ends it. The harness
         (colocation_real.py) creates the go files of a together run at once:
         the start barrier.
"""
import argparse
import json
import os
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "examples"))
from tracer_markers import mark  # noqa: E402

KINDS = ("gen", "batch", "gemm", "launch", "mlp", "cnn")


def parse(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("kind", choices=KINDS)
    ap.add_argument("--serve", metavar="DIR", help="serve measured phases on request (see above)")
    ap.add_argument("--tokens", type=int, default=96, help="gen: new tokens per phase")
    ap.add_argument("--forwards", type=int, default=150, help="batch: forward passes per phase")
    ap.add_argument("--seq", type=int, default=512, help="batch: sequence length")
    ap.add_argument("--products", type=int, default=400, help="gemm: matrix products per phase")
    ap.add_argument("--n", type=int, default=8192, help="gemm: matrix size")
    ap.add_argument("--launches", type=int, default=100000, help="launch: launches per phase")
    ap.add_argument("--steps", type=int, default=None, help="mlp: steps per phase (600); cnn: training steps (12)")
    ap.add_argument("--width", type=int, default=1024, help="mlp: layer width")
    ap.add_argument("--cudnn", action="store_true", help="cnn: convolutions through cuDNN")
    return ap.parse_args(argv)


def build(a):
    """The workload's measured step (a function that ends synchronized)."""
    import torch

    if not torch.cuda.is_available():
        raise SystemExit("CUDA is not available: these workloads need an NVIDIA GPU")
    torch.manual_seed(0)
    if a.kind in ("gen", "batch"):
        from transformers import GPT2Config, GPT2LMHeadModel

        model = GPT2LMHeadModel(GPT2Config()).half().cuda().eval()
        if a.kind == "gen":
            ids = torch.randint(0, 50257, (1, 16), device="cuda")
            gen = dict(max_new_tokens=a.tokens, min_new_tokens=a.tokens, do_sample=False, pad_token_id=0)

            def step():
                with torch.no_grad():
                    model.generate(ids, attention_mask=torch.ones_like(ids), **gen)
                torch.cuda.synchronize()

            return step
        ids = torch.randint(0, 50257, (8, a.seq), device="cuda")

        def step():
            with torch.no_grad():
                for _ in range(a.forwards):
                    out = model(ids).logits
            out[0, -1, :256].cpu()  # a device-to-host copy: replay compares it bit for bit
            torch.cuda.synchronize()

        return step
    if a.kind == "gemm":
        x = torch.randn(a.n, a.n, device="cuda", dtype=torch.float16)
        w = torch.randn(a.n, a.n, device="cuda", dtype=torch.float16) / a.n**0.5
        y = torch.empty_like(x)

        def step():
            for i in range(a.products):
                torch.matmul(x, w, out=y)
                if i % 10 == 9:
                    torch.cuda.synchronize()
            y[0, :256].cpu()  # a device-to-host copy: replay compares it bit for bit
            torch.cuda.synchronize()

        return step
    if a.kind == "mlp":
        layers = []
        for _ in range(4):
            layers += [torch.nn.Linear(a.width, a.width), torch.nn.ReLU()]
        mlp = torch.nn.Sequential(*layers).half().cuda().eval()
        x = torch.randn(1, a.width, device="cuda", dtype=torch.float16)
        steps = a.steps or 600

        def step():
            with torch.no_grad():
                for _ in range(steps):
                    y = mlp(x)
                    torch.cuda.synchronize()  # every step: the latency-sensitive loop
            y[0, :256].cpu()  # a device-to-host copy: replay compares it bit for bit
            torch.cuda.synchronize()

        return step
    if a.kind == "cnn":
        torch.backends.cudnn.enabled = a.cudnn
        nn = torch.nn
        net = nn.Sequential(
            nn.Conv2d(3, 64, 3, padding=1), nn.ReLU(),
            nn.Conv2d(64, 128, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
            nn.Conv2d(128, 256, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
            nn.Conv2d(256, 256, 3, padding=1), nn.ReLU(), nn.AdaptiveAvgPool2d(1),
            nn.Flatten(), nn.Linear(256, 10),
        ).cuda()
        opt = torch.optim.SGD(net.parameters(), lr=0.01, momentum=0.9)
        imgs = torch.randn(32, 3, 96, 96, device="cuda")
        labels = torch.randint(0, 10, (32,), device="cuda")
        steps = a.steps or 12

        def step():
            for _ in range(steps):
                opt.zero_grad(set_to_none=True)
                loss = nn.functional.cross_entropy(net(imgs), labels)
                loss.backward()
                opt.step()
                loss.detach().cpu()  # the step's loss copied back (and a synchronization)
            torch.cuda.synchronize()

        return step
    x = torch.zeros(1, device="cuda")

    def step():
        for i in range(a.launches):
            x.add_(1.0)
            if i % 100 == 99:
                torch.cuda.synchronize()
        torch.cuda.synchronize()

    return step


def serve(a, step):
    d = a.serve
    open(os.path.join(d, f"ready.{a.kind}"), "w").close()
    k = 1
    while True:
        go = os.path.join(d, f"go.{a.kind}.{k}")
        while not os.path.exists(go):
            if os.path.exists(os.path.join(d, "quit")):
                return
            time.sleep(0.0005)
        mark("phase", f"served {a.kind} {k}")  # under tracer: each served run is a phase
        t = time.perf_counter()
        step()
        dt = time.perf_counter() - t
        mark("phase", "between")
        tmp = os.path.join(d, f".done.{a.kind}.{k}")
        with open(tmp, "w") as f:
            json.dump({"kind": a.kind, "run": k, "seconds": dt}, f)
        os.rename(tmp, os.path.join(d, f"done.{a.kind}.{k}"))
        k += 1


def main(argv=None):
    a = parse(argv)
    mark("phase", "setup")
    step = build(a)
    mark("phase", "warmup")
    step()
    if a.serve:
        serve(a, step)
        return
    mark("phase", "generate")
    t = time.perf_counter()
    step()
    dt = time.perf_counter() - t
    mark("phase", "end")
    print(json.dumps({"kind": a.kind, "seconds": dt}), flush=True)


if __name__ == "__main__":
    main()
