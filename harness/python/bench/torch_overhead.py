"""The cost of recording a training step with ampbench.torch (issue 20): a recorded step against
the same step unrecorded, judging deferred, under bf16 autocast and in fp32, and what judging then
costs at two sample counts.
Prints the numbers; a benchmark (CTest label bench), not a pass/fail timing test. Exit 77 (a
skip) without NumPy or PyTorch."""

import sys
import time

try:
    import numpy  # noqa: F401  (ampbench needs it)
    import torch
except ImportError as e:
    print(f"skipped: {e}")
    sys.exit(77)
import ampbench.torch  # noqa: E402


def step(model, x, y, autocast=True):
    with torch.autocast("cpu", dtype=torch.bfloat16, enabled=autocast):
        logits = model(x)
    torch.nn.functional.cross_entropy(logits.float(), y).backward()


def best_of(runs, f):
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        f()
        times.append(time.perf_counter() - start)
    return min(times)


def main():
    torch.manual_seed(0)
    width = 512
    model = torch.nn.Sequential(torch.nn.LayerNorm(width), torch.nn.Linear(width, width),
                                torch.nn.GELU(), torch.nn.Linear(width, 10))
    x, y = torch.randn(256, width), torch.randint(0, 10, (256,))
    # bf16 autocast, and fp32 (no autocast): where the CPU's bf16 kernels are slow (ATen's own
    # gemm on a CPU without AVX-512), the fp32 step shows what recording itself costs.
    for autocast in (True, False):
        step(model, x, y, autocast)  # warm-up
        plain = best_of(5, lambda: step(model, x, y, autocast))

        def recorded():
            with ampbench.torch.record(model):
                step(model, x, y, autocast)

        recording = best_of(5, recorded)
        print(f"{'bf16 autocast' if autocast else 'fp32'} step {plain * 1e3:.2f} ms, recorded "
              f"{recording * 1e3:.2f} ms (+{(recording - plain) * 1e3:.2f}): "
              f"ratio {recording / plain:.2f}")
    for samples in (256, 4096):
        rec = ampbench.torch.record(model, samples=samples)
        with rec:
            step(model, x, y)
        judging = best_of(1, rec.judge)
        positions = sum(j["judged_positions"] for j in rec.judge())
        print(f"judging at most {samples} positions per output: {len(rec.judge())} outputs, "
              f"{positions} positions, {judging:.2f} s")


if __name__ == "__main__":
    main()
