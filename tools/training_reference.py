#!/usr/bin/python3
"""PyTorch loss trajectories for ort_train's optimizer parity tests.

    /usr/bin/python3 tools/training_reference.py [--out tests/models]

For the MLP exported by tools/export_models.py (same seeds, same weights) and
its gradient-reference batch (tests/models/mlp/train_batches/0, mse loss), it
runs 10 optimizer steps per configuration in float32 and writes
tests/models/mlp/trajectories.json: per configuration the optimizer and
schedule keys of the model description, and the 10 losses (each computed
before its step's update). Sgd, Adam and AdamW are torch.optim's; AdamW in
huggingface mode and Lamb follow the formulas of the project spec (section 2),
written out here. max_grad_norm uses torch.nn.utils.clip_grad_norm_; the
schedules are Hugging Face's formulas with LambdaLR (step, then schedule).
tests/optimizers/optimizer_parity_test.cc requires ort_train's losses to
match within 1e-5 relative.
"""
import argparse
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


def trajectory(module, x, target, spec):
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
    for t in range(1, STEPS + 1):
        module.zero_grad(set_to_none=True)
        loss = F.mse_loss(module(x), target)
        losses.append(loss.item())
        loss.backward()
        if "max_grad_norm" in cfg:
            torch.nn.utils.clip_grad_norm_(params, cfg["max_grad_norm"])
        if opt:
            opt.step()
            sched.step()
        else:
            manual_update(params, names, state, cfg, cfg["lr"] * f(t - 1), t)
    return losses


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", default=os.path.join(os.path.dirname(__file__), "..", "tests", "models"))
    args = ap.parse_args()
    folder = os.path.join(args.out, "mlp")
    batch = os.path.join(folder, "train_batches", "0")
    x = torch.from_numpy(numpy_helper.to_array(onnx.load_tensor(os.path.join(batch, "x.pb"))).copy())
    target = torch.from_numpy(numpy_helper.to_array(onnx.load_tensor(os.path.join(batch, "labels.pb"))).copy())
    out = {}
    for name, spec in CONFIGS.items():
        torch.manual_seed(0)
        module = export_models.model_specs()["mlp"][0]
        onnx_model = onnx.load(os.path.join(folder, "model.onnx"))
        for init in onnx_model.graph.initializer:  # the committed weights, exactly
            dict(module.named_parameters())[init.name].data.copy_(torch.from_numpy(numpy_helper.to_array(init).copy()))
        losses = trajectory(module, x, target, spec)
        out[name] = dict(spec, losses=losses)
        print(f"{name:20} " + " ".join(f"{v:.5f}" for v in losses))
    with open(os.path.join(folder, "trajectories.json"), "w") as f:
        json.dump({"steps": STEPS, "configs": out}, f, indent=1)


if __name__ == "__main__":
    main()
