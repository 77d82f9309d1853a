#!/usr/bin/env python3
"""Training speed on one GPU, ort_train vs PyTorch eager, side by side in one run.

  python3 bench/bench_gpu.py [--ort-train build/ort_train] [--models bert,gpt2] [--steps 20]
                             [--precision fp32|bf16] [--no-compile]

Models (tools/export_models.py's Bert and Gpt, the same modules in both
frameworks; ort_train trains their training-mode ONNX export, so BERT's
Dropout runs in both). Before timing, each model's first loss with dropout off
must agree between the two (an eval-mode export against PyTorch's eval forward).
  bert  BERT-base MLM: 12 layers, hidden 768, 12 heads, intermediate 3072,
        vocab 30522, seq 128, batch 32, Adam lr 1e-4; cross-entropy over the
        vocabulary at every position.
  gpt2  GPT-2 small: 12 layers, hidden 768, 12 heads, vocab 50257, seq 1024,
        batch 8, AdamW lr 1e-4, LM head tied to the token embedding; the model
        computes its own shifted cross-entropy.
float32 with TF32 matmuls allowed in both (PyTorch: torch.backends.*.allow_tf32;
ort_train: its default), or with --precision bf16 PyTorch's autocast to
bfloat16 against ort_train's --precision bf16. PyTorch runs eager and, unless
--no-compile, torch.compile (its default mode) too. Prints ms/step (median after warm-up; ort_train's from
--metrics), sequences/s, tokens/s, peak GPU memory (PyTorch:
max_memory_allocated; ort_train: its caching allocator's peak), the ratio of
ort_train's step time to PyTorch's, and model FLOPs utilization:
(6 N + 12 L d s) per token over the card's dense TF32 (or BF16) peak.
`--tiny --device cpu` runs a small configuration on the CPU to check the harness.
"""
import argparse
import inspect
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "tools"))

WARMUP = 3
# Dense (not sparse) tensor-core peaks, FLOP/s: TF32 and BF16 (NVIDIA's data sheets).
PEAKS = {
    "fp32": [("H100 PCIe", 378e12), ("H100 NVL", 417e12), ("H100", 494.7e12), ("H200", 494.7e12), ("A100", 156e12)],
    "bf16": [("H100 PCIe", 756e12), ("H100 NVL", 835e12), ("H100", 989.4e12), ("H200", 989.4e12), ("A100", 312e12)],
}

CONFIGS = {
    "bert": dict(vocab=30522, hidden=768, layers=12, heads=12, inter=3072, seq=128, batch=32, opt="Adam"),
    "gpt2": dict(vocab=50257, hidden=768, layers=12, heads=12, seq=1024, batch=8, opt="AdamW"),
}
TINY = {
    "bert": dict(vocab=1000, hidden=64, layers=2, heads=4, inter=256, seq=32, batch=4, opt="Adam"),
    "gpt2": dict(vocab=1000, hidden=64, layers=2, heads=4, seq=64, batch=2, opt="AdamW"),
}


def build(name, c):
    import torch
    from export_models import Bert, Gpt
    torch.manual_seed(0)
    g = torch.Generator().manual_seed(1)
    b, s = c["batch"], c["seq"]
    ids = torch.randint(0, c["vocab"], (b, s), generator=g)
    labels = torch.randint(0, c["vocab"], (b, s), generator=g)
    if name == "bert":
        model = Bert(vocab=c["vocab"], hidden=c["hidden"], layers=c["layers"], heads=c["heads"], inter=c["inter"],
                     max_pos=max(512, s))
        inputs = {"input_ids": ids, "attention_mask": torch.ones(b, s, dtype=torch.int64),
                  "token_type_ids": torch.zeros(b, s, dtype=torch.int64)}
        return model, inputs, labels
    model = Gpt(vocab=c["vocab"], hidden=c["hidden"], layers=c["layers"], heads=c["heads"], max_pos=s)
    model.lm_head.weight = model.tok.weight  # GPT-2 ties them
    return model, {"input_ids": ids, "labels": ids}, None


def params_of(model):
    return sum(p.numel() for p in {id(p): p for p in model.parameters()}.values())


def flops_per_step(name, c, n_params):
    tokens = c["batch"] * c["seq"]
    return 6 * n_params * tokens + 12 * c["layers"] * c["hidden"] * c["seq"] * tokens


def worker_torch(args):
    import torch
    c = (TINY if args.tiny else CONFIGS)[args.model]
    dev = torch.device(args.device)
    torch.backends.cuda.matmul.allow_tf32 = True
    torch.backends.cudnn.allow_tf32 = True
    model, inputs, labels = build(args.model, c)
    if args.check:  # the agreement check: the first loss without dropout, nothing timed
        model.to(dev).eval()
        with torch.no_grad():
            out = model(*[v.to(dev) for v in inputs.values()])
            loss = out[0] if labels is None else torch.nn.functional.cross_entropy(
                out.reshape(-1, out.shape[-1]), labels.to(dev).reshape(-1))
        print(json.dumps({"first_loss": float(loss)}))
        return
    model.to(dev).train()
    inputs = {k: v.to(dev) for k, v in inputs.items()}
    if labels is not None:
        labels = labels.to(dev)
    opt_cls = torch.optim.AdamW if c["opt"] == "AdamW" else torch.optim.Adam
    opt = opt_cls(model.parameters(), lr=1e-4)
    sync = torch.cuda.synchronize if dev.type == "cuda" else (lambda: None)
    forward = torch.compile(model) if args.compile_worker else model
    import contextlib
    autocast = (lambda: torch.autocast(dev.type, dtype=torch.bfloat16)) if args.precision == "bf16" else \
        contextlib.nullcontext
    times = []
    for i in range(args.steps + WARMUP):
        sync()
        t = time.perf_counter()
        opt.zero_grad(set_to_none=True)
        with autocast():
            out = forward(*inputs.values())
            if labels is None:
                loss = out[0]
            else:
                loss = torch.nn.functional.cross_entropy(out.reshape(-1, out.shape[-1]), labels.reshape(-1))
        loss.backward()
        opt.step()
        sync()
        if i >= WARMUP:
            times.append((time.perf_counter() - t) * 1000)
    peak = torch.cuda.max_memory_allocated() / 2**20 if dev.type == "cuda" else float("nan")
    name = torch.cuda.get_device_name() if dev.type == "cuda" else "cpu"
    print(json.dumps({"ms": statistics.median(times), "peak_mib": peak, "version": torch.__version__,
                      "device": name, "params": params_of(model)}))


def export(name, c, folder, training):
    """training: Dropout stays in the graph (PyTorch's train mode), as both frameworks train;
    otherwise an eval-mode export for the first-loss agreement check."""
    import torch
    from export_models import write_tensor
    model, inputs, labels = build(name, c)
    model.train(training)
    outputs = ["logits"] if name == "bert" else ["loss", "logits"]
    # The TorchScript exporter (newer PyTorch defaults to the dynamo one), as tools/export_models.py uses.
    # No constant folding: it would fold GPT-2's Transpose of the tied embedding into a second, untied
    # copy of the 38.6 M-element matrix (ort_train's own folding leaves trainable weights alone).
    extra = {"dynamo": False} if "dynamo" in inspect.signature(torch.onnx.export).parameters else {}
    torch.onnx.export(model, tuple(inputs.values()), os.path.join(folder, "model.onnx"), input_names=list(inputs),
                      output_names=outputs, opset_version=17, do_constant_folding=False,
                      training=torch.onnx.TrainingMode.TRAINING if training else torch.onnx.TrainingMode.EVAL, **extra)
    batch = os.path.join(folder, "data", "0")
    os.makedirs(batch)
    feeds = list(inputs.items()) + ([("labels", labels)] if labels is not None else [])
    for k, v in feeds:
        write_tensor(v.numpy(), k, os.path.join(batch, f"{k}.pb"))
    b, s = c["batch"], c["seq"]
    with open(os.path.join(folder, "desc.yaml"), "w") as f:
        if name == "bert":
            ins = "".join(f"  - {{name: {n}, dtype: int64, shape: [{b}, {s}]}}\n"
                          for n in ["input_ids", "attention_mask", "token_type_ids"])
            f.write("inputs:\n" + ins + f"labels: [{{name: labels, dtype: int64, shape: [{b}, {s}]}}]\n"
                    "loss: {type: softmax_cross_entropy, input: logits, target: labels}\n")
        else:
            f.write(f"inputs:\n  - {{name: input_ids, dtype: int64, shape: [{b}, {s}]}}\n"
                    f"  - {{name: labels, dtype: int64, shape: [{b}, {s}]}}\n"
                    "loss: {output: loss}\n")
    return params_of(model)


def run_ort_train(args, name, c, folder, steps, extra=()):
    """Trains the export in `folder` (with `extra` flags); returns its --metrics lines and the peak memory it logged."""
    metrics = os.path.join(folder, "m.jsonl")
    cmd = [args.ort_train, "train", "--model", os.path.join(folder, "model.onnx"), "--config",
           os.path.join(folder, "desc.yaml"), "--data", os.path.join(folder, "data"), "--optimizer", c["opt"],
           "--lr", "1e-4", "--steps", str(steps), "--device", args.device, "--metrics", metrics,
           "--log-every", str(steps), "--precision", args.precision] + list(extra)
    r = subprocess.run(cmd, capture_output=True, text=True)
    if r.returncode != 0:
        sys.exit(f"ort_train failed ({name}):\n{r.stderr[-4000:]}")
    m = re.search(r"peak memory: ([0-9.]+) MiB", r.stdout + r.stderr)
    if extra:  # the measured choices it made (16-bit attention: cublas against flash), and any candidate dropped
        for line in re.findall(r"kernel choice: .*", r.stdout + r.stderr):
            print(f"  {name} {' '.join(extra)}: {line}", flush=True)
    return [json.loads(line) for line in open(metrics)], float(m.group(1)) if m else float("nan")


def run_torch(cmd, name):
    r = subprocess.run(cmd, capture_output=True, text=True)
    if r.returncode != 0:
        sys.exit(f"PyTorch failed ({name}):\n{r.stderr[-4000:]}")
    return json.loads(r.stdout.strip().splitlines()[-1])


def peak_of(name, precision):
    for key, flops in PEAKS[precision]:
        if key in name:
            return flops
    return float("nan")


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--ort-train", default="build/ort_train")
    ap.add_argument("--models", default="bert,gpt2")
    ap.add_argument("--steps", type=int, default=20)
    ap.add_argument("--device", default="cuda")
    ap.add_argument("--tiny", action="store_true")
    ap.add_argument("--precision", default="fp32", choices=["fp32", "bf16"])
    ap.add_argument("--no-compile", action="store_true", help="leave out torch.compile")
    ap.add_argument("--compile-worker", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument("--model", help=argparse.SUPPRESS)
    ap.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument("--check", action="store_true", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.worker:
        return worker_torch(args)
    printed_header = False
    for name in args.models.split(","):
        c = (TINY if args.tiny else CONFIGS)[name]
        worker = [sys.executable, os.path.abspath(__file__), "--worker", "--model", name, "--steps", str(args.steps),
                  "--device", args.device] + (["--tiny"] if args.tiny else [])
        torch_cmd = worker + ["--precision", args.precision]
        # Same model, data and weights: the first losses (dropout off) must agree before the times mean
        # anything. TF32 matmuls on a GPU: about 1e-3, not float32's 1e-6.
        with tempfile.TemporaryDirectory() as folder:
            export(name, c, folder, training=False)
            check_args = argparse.Namespace(**{**vars(args), "precision": "fp32"})
            lines, _ = run_ort_train(check_args, name, c, folder, steps=1)
        t = run_torch(worker + ["--precision", "fp32", "--check"], name)
        rel = abs(lines[0]["loss"] - t["first_loss"]) / abs(t["first_loss"])
        print(f"{name}: first loss without dropout: PyTorch {t['first_loss']:.6f}, ort_train {lines[0]['loss']:.6f} "
              f"(relative {rel:.1e})", flush=True)
        if rel > 2e-3:
            sys.exit(f"{name}: the first losses disagree; the timings would compare different work")
        with tempfile.TemporaryDirectory() as folder:
            n_params = export(name, c, folder, training=True)
            lines, ort_peak = run_ort_train(args, name, c, folder, steps=args.steps + WARMUP)
            ort_ms = statistics.median([m["step_ms"] for m in lines][WARMUP:])
            # bf16: also with half_activations (off by default until measured on a GPU), which keeps the
            # GEMMs' 16-bit outputs 16-bit through GELU, Dropout and the views as autocast does.
            rows = []
            if args.precision == "bf16":
                half, half_peak = run_ort_train(args, name, c, folder, steps=args.steps + WARMUP,
                                                extra=["--enable-pass", "half_activations"])
                rows.append(("ort_train half_activations", statistics.median([m["step_ms"] for m in half][WARMUP:]),
                             half_peak))
        t = run_torch(torch_cmd, name)
        t_compiled = None if args.no_compile else run_torch(torch_cmd + ["--compile-worker"], name)
        # Each model's rows as soon as they are measured: a run cut short at a time limit keeps them.
        if not printed_header:
            print_header(t["device"], args)
            printed_header = True
        print_rows(name, c, n_params, t, ort_ms, ort_peak, t_compiled, peak_of(t["device"], args.precision), rows)


def print_header(device, args):
    what = "float32 with TF32 matmuls" if args.precision == "fp32" else "bf16 (PyTorch autocast, ort_train --precision bf16)"
    print(f"Training steps on {device}, {what}, median of {args.steps} after {WARMUP} warm-up; "
          f"ratio: the step time over PyTorch eager's")
    print(f"{'model':6}{'framework':26}{'ms/step':>10}{'seq/s':>9}{'tokens/s':>11}{'peak MiB':>10}{'MFU':>7}"
          f"{'ratio':>7}", flush=True)


def print_rows(name, c, n, t, ort_ms, ort_peak, tc, peak, rows=()):
    fl = flops_per_step(name, c, n)
    tokens = c["batch"] * c["seq"]
    frameworks = [(f"PyTorch {t['version']}", t["ms"], t["peak_mib"])]
    if tc:
        frameworks.append((f"torch.compile {tc['version']}", tc["ms"], tc["peak_mib"]))
    frameworks.append(("ort_train", ort_ms, ort_peak))
    frameworks.extend(rows)
    for label, ms, mib in frameworks:
        mfu = fl / (ms / 1000) / peak
        print(f"{name:6}{label:26}{ms:10.2f}{c['batch'] * 1000 / ms:9.1f}{tokens * 1000 / ms:11.0f}"
              f"{mib:10.0f}{100 * mfu:6.1f}%{ms / t['ms']:7.2f}")
    print(f"{'':6}({n / 1e6:.1f} M parameters, {fl / 1e12:.2f} TFLOP per step)", flush=True)


if __name__ == "__main__":
    main()
