#!/usr/bin/python3
"""PyTorch loss trajectories for ort_train's optimizer parity tests.

    /usr/bin/python3 tools/training_reference.py [--out tests/models]

For the models exported by tools/export_models.py (same seeds, same weights)
and their gradient-reference batch and loss (train_batches/0 and training.yaml,
written by tools/gradient_reference.py), it runs 10 optimizer steps per
configuration in float32 and writes tests/models/<model>/trajectories.json:
per configuration the optimizer and schedule keys of the model description,
and the 10 losses (each computed before its step's update). The MLP gets
every configuration (optimizers, clipping, schedules); the other models every
optimizer. Parameters the exporter merged into one initializer (equal at
export: LayerNorm weights, nn.TransformerEncoder's copied layers) are tied in
PyTorch too, since the ONNX model trains them as one tensor. Sgd, Adam and AdamW are torch.optim's; AdamW in
huggingface mode and Lamb follow the formulas of the project spec (section 2),
written out here. max_grad_norm uses torch.nn.utils.clip_grad_norm_; the
schedules are Hugging Face's formulas with LambdaLR (step, then schedule).
tests/optimizers/optimizer_parity_test.cc requires ort_train's losses to
match within 1e-5 relative.

    .bench_venv/torch/bin/python tools/training_reference.py --precision bf16

writes tests/models/<model>/trajectories_bf16.json instead (the Hugging
Face BERT export's in tests/models/hf/bert_opset14, built from
tools/export_hf_models.py with transformers 4.36 in that venv): 50 AdamW steps
with the forward under torch.autocast("cpu", dtype=torch.bfloat16), and the
same 50 steps in float32 beside them, for --precision bf16's parity test.
It needs PyTorch 2 (bench/install_peers.sh's venv): Debian's 1.13 refuses
layer_norm on a bfloat16 input with float32 weights under CPU autocast.

    .bench_venv/torch/bin/python tools/training_reference.py --precision fp16

writes tests/models/<model>/trajectories_fp16.json: 50 AdamW steps under
torch.autocast("cpu", dtype=torch.float16) with torch.amp.GradScaler("cpu"),
its scale and whether it skipped the update at every step (PyTorch 2.3+).
"""
import argparse
import contextlib
import functools
import json
import math
import os
import sys

import numpy as np
import onnx
import torch
import torch.nn.functional as F
from onnx import numpy_helper

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import export_models  # noqa: E402
import gradient_reference  # noqa: E402

STEPS = 10
CONFIGS = {
    "sgd": {"optimizer": {"name": "Sgd", "lr": 0.1}},
    "sgd_momentum": {"optimizer": {"name": "Sgd", "lr": 0.05, "momentum": 0.9, "weight_decay": 0.01}},
    "adam": {"optimizer": {"name": "Adam", "lr": 0.01, "weight_decay": 0.01}},
    "adamw": {"optimizer": {"name": "AdamW", "lr": 0.01, "weight_decay": 0.1, "no_decay": ["*bias"]}},
    "adamw_huggingface": {"optimizer": {"name": "AdamW", "lr": 0.01, "weight_decay": 0.1, "mode": "huggingface"}},
    "lamb": {"optimizer": {"name": "Lamb", "lr": 0.01, "weight_decay": 0.01, "betas": [0.9, 0.999], "eps": 1e-6}},
    "adam_clip": {"optimizer": {"name": "Adam", "lr": 0.01, "max_grad_norm": 0.3}},
    "sgd_linear_warmup": {"optimizer": {"name": "Sgd", "lr": 0.2},
                          "schedule": {"type": "linear", "warmup_steps": 3, "total_steps": 10}},
    "adam_cosine": {"optimizer": {"name": "Adam", "lr": 0.02},
                    "schedule": {"type": "cosine", "warmup_steps": 2, "total_steps": 10}},
    "adam_poly": {"optimizer": {"name": "Adam", "lr": 0.02},
                  "schedule": {"type": "poly", "warmup_steps": 2, "total_steps": 8, "power": 2.0, "lr_end": 1e-4}},
}


def lr_lambda(schedule, base_lr):
    kind = schedule.get("type", "constant")
    warmup = schedule.get("warmup_steps", 0)
    total = schedule.get("total_steps", STEPS)

    def f(step):
        if step < warmup:
            return step / max(1, warmup)
        if kind == "constant":
            return 1.0
        progress = (step - warmup) / max(1, total - warmup)
        if kind == "linear":
            return max(0.0, (total - step) / max(1, total - warmup))
        if kind == "cosine":
            return max(0.0, 0.5 * (1.0 + math.cos(math.pi * 0.5 * 2.0 * progress)))
        lr_end, power = schedule.get("lr_end", 1e-7), schedule.get("power", 1.0)
        if step > total:
            return lr_end / base_lr
        return ((base_lr - lr_end) * (1 - progress) ** power + lr_end) / base_lr
    return f


def manual_update(params, names, state, cfg, lr, t):
    """AdamW huggingface mode and Lamb, from the spec's formulas."""
    b1, b2 = cfg.get("betas", [0.9, 0.999])
    eps = cfg.get("eps", 1e-6 if cfg["name"] == "Lamb" else 1e-8)
    wd = cfg.get("weight_decay", 0.0)
    with torch.no_grad():
        for p, n in zip(params, names):
            g = p.grad
            m, v = state.setdefault(n, (torch.zeros_like(p), torch.zeros_like(p)))
            m.mul_(b1).add_(g, alpha=1 - b1)
            v.mul_(b2).addcmul_(g, g, value=1 - b2)
            if cfg["name"] == "Lamb":
                r = (m / (1 - b1 ** t)) / ((v / (1 - b2 ** t)).sqrt() + eps) + wd * p
                wn, rn = p.norm().item(), r.norm().item()
                ratio = wn / rn if wn > 0 and rn > 0 else 1.0
                p.sub_(lr * ratio * r)
            else:
                step = lr * math.sqrt(1 - b2 ** t) / (1 - b1 ** t)
                p.sub_(step * m / (v.sqrt() + eps))
                p.sub_(lr * wd * p)


def trajectory(module, loss_fn, spec, steps=None, autocast=None, scaler=None, scales=None):
    """The losses of `steps` optimizer steps (default STEPS), each computed
    before its update; the forward under `autocast` when given. With a
    GradScaler `scaler`, the backward is of the scaled loss and the scaler
    steps the optimizer; `scales` receives (scale used, skipped) per step."""
    steps = steps or STEPS
    autocast = autocast or contextlib.nullcontext
    cfg = spec["optimizer"]
    params = list(module.parameters())
    names = [n for n, _ in module.named_parameters()]
    manual = cfg["name"] == "Lamb" or cfg.get("mode") == "huggingface"
    opt = None
    if not manual:
        no_decay = cfg.get("no_decay", [])
        decay = [p for n, p in module.named_parameters() if not any(n.endswith(g.lstrip("*")) for g in no_decay)]
        other = [p for n, p in module.named_parameters() if any(n.endswith(g.lstrip("*")) for g in no_decay)]
        groups = [{"params": decay, "weight_decay": cfg.get("weight_decay", 0.01 if cfg["name"] == "AdamW" else 0.0)}]
        if other:
            groups.append({"params": other, "weight_decay": 0.0})
        kw = {"lr": cfg["lr"]}
        if cfg["name"] == "Sgd":
            opt = torch.optim.SGD(groups, momentum=cfg.get("momentum", 0.0), **kw)
        else:
            kw["betas"] = tuple(cfg.get("betas", [0.9, 0.999]))
            kw["eps"] = cfg.get("eps", 1e-8)
            opt = (torch.optim.Adam if cfg["name"] == "Adam" else torch.optim.AdamW)(groups, **kw)
    f = lr_lambda(spec.get("schedule", {}), cfg["lr"])
    sched = torch.optim.lr_scheduler.LambdaLR(opt, f) if opt else None
    state, losses = {}, []
    for t in range(1, steps + 1):
        module.zero_grad(set_to_none=True)
        with autocast():
            loss = loss_fn()
        losses.append(loss.float().item())
        if scaler is not None:
            used = scaler.get_scale()
            scaler.scale(loss).backward()
            scaler.step(opt)  # unscales, and skips the update when a gradient is inf/NaN
            scaler.update()
            sched.step()
            scales.append((used, scaler.get_scale() < used))  # a backoff is what a skipped step does
            continue
        loss.backward()
        if "max_grad_norm" in cfg:
            torch.nn.utils.clip_grad_norm_(params, cfg["max_grad_norm"])
        if opt:
            opt.step()
            sched.step()
        else:
            manual_update(params, names, state, cfg, cfg["lr"] * f(t - 1), t)
    return losses


OPTIMIZERS = ["sgd", "sgd_momentum", "adam", "adamw", "lamb"]
# Learning rates scaled per model so 10 steps stay stable (LeNet spikes at the
# MLP's rates; transformer_lm's loss is a sum over 16 tokens): a chaotic
# trajectory would turn rounding differences into large loss differences.
LR_SCALE = {"lenet": 0.2, "transformer_lm": 0.01, "mobilenet_v3": 0.05}
MODELS = {"mlp": list(CONFIGS), "lenet": OPTIMIZERS, "bert": OPTIMIZERS, "gpt": OPTIMIZERS,
          "transformer_lm": OPTIMIZERS, "mobilenet_v3": OPTIMIZERS,
          "lstm_lm": OPTIMIZERS, "gru_lm": OPTIMIZERS, "bilstm_tagger": OPTIMIZERS, "hf/electra_opset14": OPTIMIZERS,
          "hf/swin_opset14": OPTIMIZERS, "loop_branch": OPTIMIZERS}


def tie_shared(module, table):
    """Makes parameters that share one ONNX initializer one nn.Parameter."""
    for kind in table.values():
        if kind[0] != "param" or len(kind[1]) < 2:
            continue
        (first, t0), rest = kind[1][0], kind[1][1:]
        keep = module.get_parameter(first)
        for name, t in rest:
            if t != t0:
                raise SystemExit(f"cannot tie {name} to {first}: one is transposed")
            parent, _, attr = name.rpartition(".")
            setattr(module.get_submodule(parent) if parent else module, attr, keep)


def loss_function(name, module, folder, onnx_model):
    batch = os.path.join(folder, "train_batches", "0")
    inits = {i.name for i in onnx_model.graph.initializer}
    inputs = [torch.from_numpy(numpy_helper.to_array(onnx.load_tensor(os.path.join(batch, f"{vi.name}.pb"))).copy())
              .to(DEVICE) for vi in onnx_model.graph.input if vi.name not in inits]
    spec = gradient_reference.LOSSES[name]
    output_names = [o.name for o in onnx_model.graph.output]
    labels = None
    if spec is not None:
        labels = torch.from_numpy(numpy_helper.to_array(onnx.load_tensor(os.path.join(batch, "labels.pb"))).copy())
        labels = labels.to(DEVICE)

    def f():
        outs = module(*inputs)
        outs = outs if isinstance(outs, tuple) else (outs,)
        if spec is None:
            return outs[output_names.index("loss")]
        y = outs[output_names.index(spec["input"])]
        if spec["type"] == "mse":
            return F.mse_loss(y, labels, reduction=spec["reduction"])
        return F.cross_entropy(y.reshape(-1, y.shape[-1]), labels.reshape(-1), reduction=spec["reduction"],
                               ignore_index=spec.get("ignore_index", -100))
    return f


# --precision bf16: BF16_STEPS AdamW steps per model, the forward under
# torch.autocast("cpu", dtype=torch.bfloat16) (PyTorch's own op lists: its
# GEMMs and convolutions in bfloat16, and what follows a bfloat16 GEMM in
# bfloat16 too where the op is on no list), the backward outside it.
BF16_STEPS = 50
DEVICE = torch.device("cpu")  # --device: where modules and batches live
BF16_CONFIG = {"optimizer": {"name": "AdamW", "lr": 0.001, "weight_decay": 0.01}}
BF16_MODELS = ["mlp", "lenet", "bert", "gpt", "hf/bert_opset14"]
# tools/export_hf_models.py's exports, with their own loss (the model family each is).
HF_MODELS = {"hf/bert_opset14": "bert", "hf/electra_opset14": "electra", "hf/swin_opset14": "swin"}


def hf_module_and_loss(model_name, folder, onnx_model):
    """A Hugging Face export's module (WithLoss or ImageWithLoss over the seeded
    tiny model, so the exported weights; checked below) and its loss over the
    export's batches in the order ort_train reads them: step i uses batch_<i mod 4>."""
    import export_hf_models
    family = HF_MODELS[model_name]
    torch.manual_seed(0)  # as export_hf_models.export()
    wrap = export_hf_models.ImageWithLoss if family in export_hf_models.IMAGE_MODELS else export_hf_models.WithLoss
    module = wrap(export_hf_models.MODELS[family]())
    module.train()  # exported with dropout 0, so train and eval modes compute the same
    # The export folds the transpose of a tied output embedding into a second
    # initializer, so ort_train trains the decoder's copy apart from the
    # embedding: untied here too.
    head = module.model.get_output_embeddings() if hasattr(module.model, "get_output_embeddings") else None
    untied = ()
    if head is not None and head.weight is module.model.get_input_embeddings().weight:
        head.weight = torch.nn.Parameter(head.weight.detach().clone())
        untied = tuple(n for n, p in module.named_parameters() if p is head.weight)
    # An ONNX Gather does not carry nn.Embedding's padding_idx, whose row
    # PyTorch never updates: the exported model trains that row like any other
    # (as ONNX Runtime does), so the reference does too.
    for sub in module.modules():
        if isinstance(sub, torch.nn.Embedding):
            sub.padding_idx = None
    values = {i.name: numpy_helper.to_array(i) for i in onnx_model.graph.initializer}
    for name, p in module.named_parameters():  # the exported weights, each under its own name or transposed
        v = p.detach().numpy()
        if not (name in values and np.array_equal(values[name], v)) and \
                not any(a.shape == v.T.shape and np.array_equal(a, v.T) for a in values.values()):
            raise SystemExit(f"{model_name}: parameter {name} is not in the export: another transformers or seed?")
    # Parameters the exporter merged into one initializer (equal at export:
    # LayerNorm weights, zero biases) train as one tensor in ort_train: tied here.
    tie_shared(module, gradient_reference.classify(onnx_model, module, untied))
    names = sorted(os.listdir(os.path.join(folder, "train_batches")))
    data = []
    for b in names:
        d = os.path.join(folder, "train_batches", b)
        data.append({f[:-3]: torch.from_numpy(numpy_helper.to_array(onnx.load_tensor(os.path.join(d, f))).copy())
                     for f in sorted(os.listdir(d))})
    step = [0]

    def f():
        b = data[step[0] % len(data)]
        step[0] += 1
        return module(**b)[0]
    return module, f


def module_and_loss(model_name, folder, onnx_model):
    if model_name in HF_MODELS:
        return hf_module_and_loss(model_name, folder, onnx_model)
    torch.manual_seed(0)  # as export_models.main(): the committed weights
    module = export_models.model_specs()[model_name][0]
    module.train(model_name in export_models.TRAINING_MODE)
    tie_shared(module, gradient_reference.classify(onnx_model, module))
    module.to(DEVICE)
    return module, loss_function(model_name, module, folder, onnx_model)


def model_and_spec(args, model_name, config):
    """A model's folder, its ONNX file and `config` with the model's learning rate."""
    folder = os.path.join(args.out, model_name)
    spec = json.loads(json.dumps(config))
    spec["optimizer"]["lr"] *= LR_SCALE.get(model_name, 1.0)
    return folder, onnx.load(os.path.join(folder, "model.onnx")), spec


def bf16_on_device(args):
    """--device cuda: PyTorch's own GPU run (torch.autocast("cuda")) of the
    committed CPU trajectories, printed beside them and written nowhere: how
    far PyTorch itself moves from its CPU run bounds what ort_train's GPU run
    can be held to."""
    for model_name in args.models.split(","):
        folder, onnx_model, spec = model_and_spec(args, model_name, BF16_CONFIG)
        with open(os.path.join(folder, "trajectories_bf16.json")) as f:
            stored = json.load(f)["configs"]["adamw"]
        module, loss_fn = module_and_loss(model_name, folder, onnx_model)
        losses = trajectory(module, loss_fn, spec, BF16_STEPS,
                            functools.partial(torch.autocast, args.device, dtype=torch.bfloat16))
        rel = [abs(b - a) / abs(a) for a, b in zip(stored["losses"], losses)]
        print(f"{model_name:15} PyTorch bf16 on {args.device} vs its CPU run: worst relative loss difference over "
              f"{BF16_STEPS} steps {max(rel):.2e} (step {rel.index(max(rel))})")
        for t, (a, b) in enumerate(zip(stored["losses"], losses)):
            print(f"  step {t:2d}  {args.device} {b:.6f}  cpu {a:.6f}")


def bf16_trajectories(args):
    if args.device != "cpu":
        return bf16_on_device(args)
    for model_name in args.models.split(","):
        folder, onnx_model, spec = model_and_spec(args, model_name, BF16_CONFIG)
        out = {}
        for precision, autocast in (("fp32", None),
                                    ("bf16", functools.partial(torch.autocast, "cpu", dtype=torch.bfloat16))):
            module, loss_fn = module_and_loss(model_name, folder, onnx_model)
            out[precision] = trajectory(module, loss_fn, spec, BF16_STEPS, autocast)
        worst = max(abs(b - a) / abs(a) for a, b in zip(out["fp32"], out["bf16"]))
        print(f"{model_name:15} bf16 vs fp32 PyTorch: worst relative loss difference over {BF16_STEPS} steps "
              f"{worst:.2e}; bf16 losses " + " ".join(f"{v:.5f}" for v in out["bf16"][:5]) + " ...")
        with open(os.path.join(folder, "trajectories_bf16.json"), "w") as f:
            json.dump({"steps": BF16_STEPS, "precision": "bf16", "torch": torch.__version__,
                       "configs": {"adamw": dict(spec, losses=out["bf16"], fp32_losses=out["fp32"])}}, f, indent=1)


# --precision fp16: FP16_STEPS AdamW steps per model, the forward under
# torch.autocast("cpu", dtype=torch.float16) and the backward of the loss
# scaled by a GradScaler that starts far too high (2^24) and grows every 4
# clean steps, so it skips steps and backs off at the start and again
# whenever its growth overflows float16: the test holds ort_train's skipped
# steps and scales to these, step for step.
FP16_STEPS = 50
FP16_CONFIG = dict(BF16_CONFIG, loss_scale={"init_scale": 2.0 ** 24, "growth_interval": 4})
FP16_MODELS = BF16_MODELS


def fp16_trajectories(args):
    for model_name in args.models.split(","):
        folder, onnx_model, spec = model_and_spec(args, model_name, FP16_CONFIG)
        module, loss_fn = module_and_loss(model_name, folder, onnx_model)
        scaler = torch.amp.GradScaler("cpu", **spec["loss_scale"])
        scales = []
        losses = trajectory(module, loss_fn, spec, FP16_STEPS,
                            functools.partial(torch.autocast, "cpu", dtype=torch.float16), scaler, scales)
        skipped = [i + 1 for i, (_, s) in enumerate(scales) if s]
        print(f"{model_name:15} fp16: skipped steps {skipped}; final scale {scaler.get_scale():g}; losses "
              + " ".join(f"{v:.5f}" for v in losses[:5]) + " ...")
        with open(os.path.join(folder, "trajectories_fp16.json"), "w") as f:
            json.dump({"steps": FP16_STEPS, "precision": "fp16", "torch": torch.__version__,
                       "configs": {"adamw": dict(spec, losses=losses, loss_scales=[u for u, _ in scales],
                                                 skipped=[int(s) for _, s in scales])}}, f, indent=1)


def main():
    global DEVICE
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", default=os.path.join(os.path.dirname(__file__), "..", "tests", "models"))
    ap.add_argument("--models", help="comma-separated (default: every model of the chosen precision)")
    ap.add_argument("--precision", choices=["fp32", "bf16", "fp16"], default="fp32",
                    help="bf16: trajectories_bf16.json, 50 AdamW steps under CPU autocast, with float32's beside "
                    "them; fp16: trajectories_fp16.json, 50 steps under CPU autocast with a GradScaler")
    ap.add_argument("--device", default="cpu",
                    help="with --precision bf16: cuda prints PyTorch's GPU trajectory beside the committed CPU one "
                    "and writes nothing")
    args = ap.parse_args()
    DEVICE = torch.device(args.device)
    if args.device != "cpu" and args.precision != "bf16":
        ap.error("--device other than cpu goes with --precision bf16")
    if args.precision == "fp16":
        args.models = args.models or ",".join(FP16_MODELS)
        return fp16_trajectories(args)
    if args.precision == "bf16":
        args.models = args.models or ",".join(BF16_MODELS)
        return bf16_trajectories(args)
    args.models = args.models or ",".join(MODELS)
    for model_name in args.models.split(","):
        folder = os.path.join(args.out, model_name)
        onnx_model = onnx.load(os.path.join(folder, "model.onnx"))
        out = {}
        for name in MODELS[model_name]:
            spec = json.loads(json.dumps(CONFIGS[name]))
            spec["optimizer"]["lr"] *= LR_SCALE.get(model_name, 1.0)
            module, loss_fn = module_and_loss(model_name, folder, onnx_model)
            losses = trajectory(module, loss_fn, spec)
            out[name] = dict(spec, losses=losses)
            print(f"{model_name:15} {name:20} " + " ".join(f"{v:.5f}" for v in losses))
        with open(os.path.join(folder, "trajectories.json"), "w") as f:
            json.dump({"steps": STEPS, "configs": out}, f, indent=1)


if __name__ == "__main__":
    main()
