"""The cost of recording a training step with ampbench.torch (issue 20): a recorded step against
the same step unrecorded, judging deferred, and what judging then costs at two sample counts.
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


def step(model, x, y):
    with torch.autocast("cpu", dtype=torch.bfloat16):
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
    step(model, x, y)  # warm-up
    plain = best_of(5, lambda: step(model, x, y))
    recorders = []

    def recorded():
        with ampbench.torch.record(model) as rec:
            step(model, x, y)
        recorders.append(rec)

    recording = best_of(5, recorded)
    print(f"step {plain * 1e3:.2f} ms, recorded {recording * 1e3:.2f} ms: "
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
