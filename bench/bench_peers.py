#!/usr/bin/env python3
"""CPU training step, ort_train against its peers: the benchmark of record.

Every framework trains the same model from the same initial weights on the
same batches with the same AdamW (torch.optim.AdamW's update: lr 1e-3, betas
0.9/0.999, eps 1e-8, weight decay 0.01 on every parameter), Dropout off, at the
same thread count, each run in its own process:

  ort_train      build/ort_train train ... --optimizer AdamW (its --metrics step_ms)
  ort            onnxruntime-training-cpu 1.19.2: artifacts from the same ONNX file,
                 then onnxruntime.training.api (Module, Optimizer), AdamW in torch mode
  torch          PyTorch 2.x from PyPI, eager
  torch-compile  the same, with torch.compile (the first step, which compiles, is
                 reported separately; warm-up steps are never timed)
  torch-debian   Debian's PyTorch 1.13 (/usr/bin/python3), eager
  ort_train-fp32 (for --precision bf16) the same ort_train binary at float32

--precision bf16 runs ort_train with --precision bf16 and PyTorch's forward
under torch.autocast("cpu", dtype=torch.bfloat16) (its backward outside, as
PyTorch documents), with ort_train fp32 beside them; ONNX Runtime's CPU
training has no bfloat16 path. The losses must then agree within 1e-2
relative by default, not 1e-5: each framework rounds to bfloat16 where its
own kernels do.

Install the peers first (two venvs under .bench_venv/, gitignored):

    bash bench/install_peers.sh

then run the driver with any Python 3 (it imports no torch itself):

    python3 bench/bench_peers.py [--workloads mlp,bert,gpt,bert-base-hf]
        [--frameworks ort_train,ort,torch,torch-compile,torch-debian] [--precision fp32|bf16]
        [--rounds 3] [--steps 20] [--warmup 3] [--threads 2] [--ort-train build/ort_train]
        (ort_train-measured: ort_train --gemm-library measured, the CNNs' setting)

Workloads (losses computed inside the exported model, so every framework
trains one and the same graph):
  mlp           MLP 784-500-10, ReLU, batch 64, softmax cross-entropy
  bert          tools/export_models.py's Bert: 4 layers, hidden 256, 4 heads,
                intermediate 1024, vocab 30522, seq 128, batch 8, MLM
                cross-entropy over the vocabulary at every position
  gpt           tools/export_models.py's Gpt: 6 layers, d 384, 6 heads, GELU MLP 4x,
                pre-LN, seq 256, batch 4, vocab 50257, next-token cross-entropy
  bert-base-hf  Hugging Face BertForMaskedLM at BERT-base size, exported by
                tools/export_hf_models.py --size base --opsets 14 --only bert
                (run with --hf-python, default /work/venv_hf/bin/python; or pass
                --hf-export DIR to reuse an export it made); its own MLM loss
  resnet18      ResNet-18 at 32x32, batch 32, BatchNorm in training mode: bench/make_resnet18.py's
                ONNX (torchvision's layer names) with SoftmaxCrossEntropyLoss appended; PyTorch
                builds the same layers and loads its initializers (no export, no torchvision)

How it measures: each workload is exported once (Debian's torch 1.13, as the
project's tools do), with every LayerNorm weight and bias perturbed (seeded)
first, because torch.onnx.export merges initializers of equal value into one
tensor, which would make ort_train train a different model. The export is
checked against the PyTorch module: every parameter must map to exactly one
initializer (by name, or by value, possibly transposed); initializers that are
no parameter (a folded causal mask, a scale) are frozen in every framework.
ONNX Runtime gets the same graph with three adjustments that change no value:
its AdamWOptimizer op is written with adam_mode 0 (torch's update; onnxblock's
AdamW block always writes mode 1, Hugging Face's), the optional outputs its
gradient builders read (SoftmaxCrossEntropyLoss log_prob, LayerNormalization
mean/inv_std_dev, Dropout mask) are named, and symbolic input dims are fixed to
the batch's shape (with them, ORT 1.19 builds a wrong gradient for the HF
export's position embeddings: the broadcast over the batch is not summed).
Rounds are interleaved: each round runs every framework once, in an order
rotated every round, and before each run the driver waits until no compiler
(cc1plus, cc1, clang, nvcc, ld, ptxas...) is running. A round's value is the median
of its --steps timed steps after --warmup untimed ones; the table shows the
median over rounds and the [min, max] range, the peak RSS of the process
(measured from outside, bench_forward.measured), the first five losses, the
peer / ort_train time ratio, and the time as a multiple of a roofline bound:
the workload's GEMM FLOPs per step (forward GEMMs x3) over this machine's
sgemm rate (a 1024x1024 float32 matmul at --threads threads in PyPI PyTorch,
measured in the same run). Every framework's first five losses must equal
ort_train's within --loss-rtol (relative), or the script prints the differing
losses and exits with status 1. Output is a Markdown block for
docs/benchmarks.md, headed by the exact command line.
"""
import argparse
import contextlib
import datetime
import hashlib
import json
import os
import platform
import shlex
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
TOOLS = os.path.join(ROOT, "tools")
sys.path.insert(0, HERE)
sys.path.insert(0, TOOLS)
import bench_forward  # noqa: E402  (measured(): run a command, report its peak RSS from outside)

# The optimizer every framework uses: torch.optim.AdamW's update and defaults,
# weight decay on every parameter (ort_train's AdamW defaults are the same).
LR, BETAS, EPS, WEIGHT_DECAY = 1e-3, (0.9, 0.999), 1e-8, 0.01

WORKLOADS = ["mlp", "bert", "gpt", "bert-base-hf", "resnet18"]
FRAMEWORKS = ["ort_train", "ort_train-fp32", "ort_train-measured", "ort", "torch", "torch-compile", "torch-debian"]
LABELS = {"ort_train": "ort_train", "ort_train-fp32": "ort_train fp32",
          "ort_train-measured": "ort_train --gemm-library measured", "ort": "ONNX Runtime training",
          "torch": "PyTorch eager", "torch-compile": "PyTorch torch.compile", "torch-debian": "PyTorch eager (Debian)"}
# What runs by default at each --precision. bf16: ONNX Runtime's CPU training
# has no bfloat16 mixed precision; ort_train's own fp32 step is the baseline.
DEFAULT_FRAMEWORKS = {"fp32": ["ort_train", "ort", "torch", "torch-compile", "torch-debian"],
                      "bf16": ["ort_train", "ort_train-fp32", "torch", "torch-compile"]}
# A first-five loss's largest relative difference from ort_train's by default:
# float32 runs agree to rounding; bfloat16 GEMMs (8 significant bits, each
# framework rounding where its kernels do) leave about 1e-3.
DEFAULT_LOSS_RTOL = {"fp32": 1e-5, "bf16": 1e-2}
# ResNet-18 (BatchNorm over 32 random images, AdamW) amplifies rounding: AdamW's first updates are about
# lr x sign(gradient) whatever its size, so a gradient element near zero that one framework's convolution
# rounds to the other sign moves its weight by 2 lr; the losses of PyTorch and ONNX Runtime part from each
# other as fast as from ort_train's (about 10x a step: 1e-5, 1e-4, 1e-3). Its first loss, before any
# update, is held to the precision's tolerance; the later ones to this.
LATER_LOSS_RTOL = {"resnet18": 2e-2}
DESCRIBE = {
    "mlp": "MLP 784-500-10, ReLU, batch 64, softmax cross-entropy",
    "bert": "BERT-style encoder (tools/export_models.py Bert): 4 layers, hidden 256, 4 heads, intermediate 1024, "
            "vocab 30522, seq 128, batch 8, MLM cross-entropy at every position",
    "gpt": "GPT-style decoder (tools/export_models.py Gpt): 6 layers, d 384, 6 heads, MLP 4x, seq 256, batch 4, "
           "vocab 50257, next-token cross-entropy",
    "bert-base-hf": "Hugging Face BertForMaskedLM, BERT-base (12 layers, hidden 768, 12 heads, intermediate 3072, "
                    "vocab 30522), seq 128, batch 8, its MLM loss (15% of positions labelled), "
                    "tools/export_hf_models.py --size base --opsets 14",
    "resnet18": "ResNet-18 (torchvision's layers, 10 classes, BatchNorm in training mode) at 32x32, batch 32, "
                "softmax cross-entropy; bench/make_resnet18.py's ONNX, no export",
}
BATCH = {"mlp": 64, "bert": 8, "gpt": 4, "bert-base-hf": 8, "resnet18": 32}
VENV = os.path.join(ROOT, ".bench_venv")
# Process names of compilers and linkers (clang compiles inside its driver process, gcc in cc1/cc1plus).
COMPILERS = {"cc1plus", "cc1", "nvcc", "ld", "ptxas", "cicc", "collect2", "ld.bfd", "ld.gold", "ld.lld", "lld",
             "clang", "clang++", "rustc"}


# ----------------------------------------------------------------------------
# Models (used by the export step and by the PyTorch workers alike)
# ----------------------------------------------------------------------------

def gemm_flops(workload):
    """Forward GEMM FLOPs (2 per multiply-add) of one step, from the shapes."""
    def encoder(b, s, h, layers, inter, vocab, heads_dense):
        t = b * s
        per_layer = 4 * 2 * t * h * h + 2 * 2 * b * s * s * h + 2 * 2 * t * h * inter  # QKVO, QK^T and PV, MLP
        return layers * per_layer + heads_dense * 2 * t * h * h + 2 * t * h * vocab  # (MLM transform) + vocab head
    if workload == "mlp":
        return 2 * 64 * (784 * 500 + 500 * 10)
    if workload == "bert":
        return encoder(8, 128, 256, 4, 1024, 30522, 1)
    if workload == "gpt":
        return encoder(4, 256, 384, 6, 4 * 384, 50257, 0)
    if workload == "resnet18":
        return resnet18_flops(32, 32)
    return encoder(8, 128, 768, 12, 3072, 30522, 1)


def resnet18_flops(batch, size):
    """ResNet-18's forward convolution and linear FLOPs at size x size."""
    flops, hw = 2 * batch * 64 * 3 * 49 * (size // 2) ** 2, size // 4  # conv1 (stride 2), then the max pool
    cin = 64
    for stage, cout in enumerate((64, 128, 256, 512), start=1):
        for i in range(2):
            stride = 2 if stage > 1 and i == 0 else 1
            hw //= stride
            flops += 2 * batch * hw * hw * 9 * (cout * cin + cout * cout)  # conv1, conv2
            if stride != 1 or cin != cout:
                flops += 2 * batch * hw * hw * cout * cin  # the 1x1 shortcut
            cin = cout
    return flops + 2 * batch * 512 * 10


def resnet18_module():
    """torchvision.models.resnet18(num_classes=10)'s layers and parameter names, without torchvision."""
    import torch.nn as nn

    class Block(nn.Module):
        def __init__(self, cin, cout, stride):
            super().__init__()
            self.conv1 = nn.Conv2d(cin, cout, 3, stride, 1, bias=False)
            self.bn1 = nn.BatchNorm2d(cout)
            self.relu = nn.ReLU()
            self.conv2 = nn.Conv2d(cout, cout, 3, 1, 1, bias=False)
            self.bn2 = nn.BatchNorm2d(cout)
            self.downsample = (nn.Sequential(nn.Conv2d(cin, cout, 1, stride, bias=False), nn.BatchNorm2d(cout))
                               if stride != 1 or cin != cout else None)

        def forward(self, x):
            h = self.bn2(self.conv2(self.relu(self.bn1(self.conv1(x)))))
            return self.relu(h + (self.downsample(x) if self.downsample is not None else x))

    class ResNet18(nn.Module):
        def __init__(self):
            super().__init__()
            self.conv1 = nn.Conv2d(3, 64, 7, 2, 3, bias=False)
            self.bn1 = nn.BatchNorm2d(64)
            self.relu = nn.ReLU()
            self.maxpool = nn.MaxPool2d(3, 2, 1)
            cin = 64
            for stage, cout in enumerate((64, 128, 256, 512), start=1):
                stride = 2 if stage > 1 else 1
                setattr(self, f"layer{stage}", nn.Sequential(Block(cin, cout, stride), Block(cout, cout, 1)))
                cin = cout
            self.avgpool = nn.AdaptiveAvgPool2d(1)
            self.fc = nn.Linear(512, 10)

        def forward(self, x):
            x = self.maxpool(self.relu(self.bn1(self.conv1(x))))
            x = self.layer4(self.layer3(self.layer2(self.layer1(x))))
            return self.fc(self.avgpool(x).flatten(1))

    return ResNet18()


def torch_model(workload, meta=None):
    """The PyTorch module of a workload, its loss inside: forward(*inputs, labels) -> loss
    (the HF one returns (loss, logits)). Dropout is replaced by Identity (off)."""
    import torch
    import torch.nn as nn
    import torch.nn.functional as F

    class CrossEntropyOnLogits(nn.Module):
        """Softmax cross-entropy, mean over every labelled position, of a model's logits."""

        def __init__(self, model):
            super().__init__()
            self.model = model

        def forward(self, *args):
            *inputs, labels = args
            logits = self.model(*inputs)
            return F.cross_entropy(logits.reshape(-1, logits.shape[-1]), labels.reshape(-1))

    class LossOnly(nn.Module):
        """A model returning (loss, logits), reduced to its loss."""

        def __init__(self, model):
            super().__init__()
            self.model = model

        def forward(self, input_ids, labels):
            return self.model(input_ids, labels)[0]

    if workload == "mlp":
        model = CrossEntropyOnLogits(nn.Sequential(nn.Linear(784, 500), nn.ReLU(), nn.Linear(500, 10)))
    elif workload == "bert":
        from export_models import Bert
        model = CrossEntropyOnLogits(Bert(vocab=30522, hidden=256, layers=4, heads=4, inter=1024, max_pos=512))
    elif workload == "gpt":
        from export_models import Gpt
        model = LossOnly(Gpt(vocab=50257, hidden=384, layers=6, heads=6, max_pos=256))
    elif workload == "resnet18":
        model = CrossEntropyOnLogits(resnet18_module())
    else:
        import export_hf_models as ehf
        hf_base_settings(ehf)
        model = ehf.WithLoss(ehf.MODELS["bert"]())
    for name, module in list(model.named_modules()):
        if isinstance(module, nn.Dropout):
            parent, _, leaf = name.rpartition(".")
            setattr(model.get_submodule(parent) if parent else model, leaf, nn.Identity())
    if meta:  # parameters the export keeps as separate tensors although PyTorch ties them
        for name in meta.get("untie", []):
            parent, _, leaf = name.rpartition(".")
            owner = model.get_submodule(parent)
            setattr(owner, leaf, nn.Parameter(getattr(owner, leaf).detach().clone()))
    return model


def hf_base_settings(ehf):
    """tools/export_hf_models.py's module settings for --size base, BERT."""
    ehf.SIZE, ehf.BATCH, ehf.SEQ, ehf.BATCHES, ehf.VOCAB = "base", 8, 128, 2, 30522


def example_batch(workload):
    """The one training batch of the built-in workloads (seeded), inputs then labels."""
    import torch
    g = torch.Generator().manual_seed(1)
    if workload == "mlp":
        return {"x": torch.randn(64, 784, generator=g), "labels": torch.randint(0, 10, (64,), generator=g)}
    if workload == "bert":
        return {"input_ids": torch.randint(0, 30522, (8, 128), generator=g),
                "attention_mask": torch.ones(8, 128, dtype=torch.int64),
                "token_type_ids": torch.zeros(8, 128, dtype=torch.int64),
                "labels": torch.randint(0, 30522, (8, 128), generator=g)}
    tokens = torch.randint(0, 50257, (4, 256), generator=g)
    return {"input_ids": tokens, "labels": tokens.clone()}  # the model predicts labels[:, 1:] from positions :-1


# ----------------------------------------------------------------------------
# Step 1 (worker): export a workload and check the export against the module
# ----------------------------------------------------------------------------

def map_parameters(model, onnx_model):
    """Matches every PyTorch parameter with the ONNX initializer holding it.

    First by name, then by value (equal bytes, or equal to the transpose, which is
    how torch.onnx folds a Linear weight feeding a MatMul). Returns (trainable
    initializer names, frozen float initializer names, names of PyTorch aliases of
    a tied parameter that the export keeps as a tensor of its own). Raises when a
    parameter has no initializer of its own (the exporter merged it with an
    equal-valued one) or a match is ambiguous."""
    import numpy as np
    from onnx import numpy_helper

    def key(a):
        a = np.ascontiguousarray(a)
        return (str(a.dtype), a.shape, hashlib.sha1(a.tobytes()).hexdigest())

    params = {n: t for n, t in model.state_dict(keep_vars=True).items() if t.__class__.__name__ == "Parameter"}
    group = {}  # parameter name -> id of the tensor (aliases of a tied parameter share it)
    for n, t in params.items():
        group[n] = id(t)
    by_value = {}  # key -> parameter names with that value (directly or transposed)
    values = {}
    for n, t in params.items():
        a = t.detach().cpu().numpy()
        values[n] = key(a)
        by_value.setdefault(key(a), []).append(n)
        if a.ndim == 2:
            by_value.setdefault(key(a.T), []).append(n)
    inits = {i.name: numpy_helper.to_array(i) for i in onnx_model.graph.initializer
             if i.data_type in (1, 10, 11, 16)}  # float, float16, double, bfloat16
    claimed = {}  # parameter name -> initializer name
    unmatched = []
    for name, a in inits.items():  # by name
        if name in params and (key(a) == values[name] or (a.ndim == 2 and name in by_value.get(key(a), []))):
            claimed[name] = name
        else:
            unmatched.append(name)
    frozen = []
    for name in unmatched:  # by value
        candidates = [n for n in by_value.get(key(inits[name]), []) if n not in claimed]
        groups = {group[n] for n in candidates}
        if not candidates:
            frozen.append(name)
            continue
        if len(groups) > 1:
            raise RuntimeError(f"initializer {name} equals several parameters ({', '.join(candidates)}): "
                               "the mapping is ambiguous")
        claimed[candidates[0]] = name
    missing = [n for n in params if n not in claimed and not any(group[m] == group[n] for m in claimed)]
    if missing:
        raise RuntimeError("these parameters have no initializer of their own in the export (torch.onnx merged "
                           "equal-valued initializers): " + ", ".join(missing))
    # Aliases of one tied PyTorch tensor that each got an initializer: the export unties them.
    untie = []
    seen = {}
    for n in params:
        if n in claimed:
            if group[n] in seen:
                untie.append(n)
            seen.setdefault(group[n], n)
    trainable = [claimed[n] for n in params if n in claimed]
    return trainable, frozen, untie


def prepare_resnet18(work):
    """bench/make_resnet18.py's ONNX with the loss inside (SoftmaxCrossEntropyLoss of the logits and a
    labels input), one seeded batch, and weights.npz under torchvision's names (the ONNX initializers,
    and num_batches_tracked, which PyTorch's BatchNorm keeps): no export, so no PyTorch needed here."""
    import numpy as np
    import onnx
    from onnx import TensorProto, helper, numpy_helper
    sys.path.insert(0, os.path.join(ROOT, "bench"))
    from make_resnet18 import build
    model, frozen = build(32, seed=0)
    g = model.graph
    g.input.append(helper.make_tensor_value_info("labels", TensorProto.INT64, ["batch"]))
    g.node.append(helper.make_node("SoftmaxCrossEntropyLoss", ["logits", "labels"], ["loss"], name="loss",
                                   reduction="mean"))
    del g.output[:]
    g.output.append(helper.make_tensor_value_info("loss", TensorProto.FLOAT, []))
    onnx.checker.check_model(model)
    model_path = os.path.join(work, "model.onnx")
    onnx.save_model(model, model_path)
    # Eight batches in turn: one batch alone is learnt by heart in three steps, and the losses, near zero,
    # then compare only their rounding.
    rng = np.random.default_rng(1)
    batch_root = os.path.join(work, "data")
    for i in range(8):
        batch = {"image": rng.standard_normal((32, 3, 32, 32)).astype(np.float32),
                 "labels": rng.integers(0, 10, (32,)).astype(np.int64)}
        os.makedirs(os.path.join(batch_root, str(i)), exist_ok=True)
        for k, v in batch.items():
            with open(os.path.join(batch_root, str(i), f"{k}.pb"), "wb") as f:
                f.write(numpy_helper.from_array(v, k).SerializeToString())
    # Under the loss wrapper's prefix, as the PyTorch worker's module names them.
    weights = {"model." + t.name: numpy_helper.to_array(t) for t in g.initializer}
    for name in frozen:
        if name.endswith(".running_mean"):
            weights["model." + name[:-len("running_mean")] + "num_batches_tracked"] = np.array(0, np.int64)
    np.savez(os.path.join(work, "weights.npz"), **weights)
    trainable = [t.name for t in g.initializer if t.name not in frozen]
    meta = {"workload": "resnet18", "model": model_path, "batches": [os.path.join(batch_root, str(i)) for i in range(8)],
            "inputs": ["image", "labels"], "trainable": trainable, "frozen": frozen, "untie": [],
            "loss_output": "loss",
            "notes": [f"{len(trainable)} trainable initializers, "
                      f"{sum(int(np.prod(weights['model.' + n].shape)) for n in trainable)} parameter elements; BatchNorm's "
                      f"running statistics ({len(frozen)}) are updated, not trained"]}
    with open(os.path.join(work, "meta.json"), "w") as f:
        json.dump(meta, f, indent=1)
    with open(os.path.join(work, "desc.yaml"), "w") as f:
        f.write(description(meta, batch))
    print(json.dumps({"ok": True, "notes": meta["notes"]}))


def worker_prepare(args):
    """Exports the workload into args.workdir: model.onnx, data/<batch>/<name>.pb,
    weights.npz (the PyTorch state_dict), desc.yaml for ort_train and meta.json."""
    if args.workload == "resnet18":
        return prepare_resnet18(args.workdir)
    import numpy as np
    import onnx
    import torch
    from export_models import write_tensor
    work, workload = args.workdir, args.workload
    notes = []
    torch.manual_seed(0)
    if workload == "bert-base-hf":
        import export_hf_models as ehf
        hf_base_settings(ehf)
        if args.hf_export:
            src = args.hf_export
            notes.append(f"export reused from {src}")
        else:
            ehf.export("bert", 14, work)
            src = os.path.join(work, "bert_opset14")
        model_path = os.path.join(src, "model.onnx")
        batch_root = os.path.join(src, "train_batches")
        # Rebuilt exactly as export_hf_models.export() builds it (seed 0), so its values are the export's.
        torch.manual_seed(0)
        model = ehf.WithLoss(ehf.MODELS["bert"]()).eval()
        output = "loss"
    else:
        model = torch_model(workload)
        # torch.onnx.export would merge equal-valued initializers (every LayerNorm weight is 1, every bias 0)
        # into one tensor: perturb them, seeded, so each keeps its own.
        g = torch.Generator().manual_seed(2)
        with torch.no_grad():
            for m in model.modules():
                if isinstance(m, torch.nn.LayerNorm):
                    m.weight.copy_(1 + 0.02 * torch.randn(m.weight.shape, generator=g))
                    m.bias.copy_(0.02 * torch.randn(m.bias.shape, generator=g))
        model.eval()
        batch = example_batch(workload)
        model_path = os.path.join(work, "model.onnx")
        torch.onnx.export(model, tuple(batch.values()), model_path, input_names=list(batch), output_names=["loss"],
                          opset_version=17, do_constant_folding=True)
        batch_root = os.path.join(work, "data")
        os.makedirs(os.path.join(batch_root, "0"), exist_ok=True)
        for k, v in batch.items():
            write_tensor(v.numpy(), k, os.path.join(batch_root, "0", f"{k}.pb"))
        output = "loss"
    onnx_model = onnx.load(model_path)
    trainable, frozen, untie = map_parameters(model, onnx_model)
    if workload == "bert-base-hf":
        # nn.Embedding(padding_idx=0) gives row 0 no gradient in PyTorch; the exported Gather has no such
        # rule. The losses only agree while no input token is the padding id.
        pad = model.model.config.pad_token_id
        if any((read_pb(os.path.join(batch_root, d, "input_ids.pb")) == pad).any() for d in os.listdir(batch_root)):
            notes.append(f"input_ids contain the padding id {pad}: PyTorch leaves its embedding row untrained, "
                         "the ONNX frameworks train it, so losses will differ")
    if untie:
        notes.append("the export keeps " + ", ".join(untie) + " as a tensor of its own, tied in PyTorch: every "
                     "framework trains it untied (the PyTorch rows untie it too)")
    ln = [n for n in trainable if "LayerNorm" in n or ".ln" in n or "_ln" in n]
    notes.append(f"{len(trainable)} trainable initializers ({len(ln)} LayerNorm weights/biases, each its own), "
                 f"{sum(int(np.prod(t.shape)) for t in model.parameters())} PyTorch parameter elements"
                 + (f"; frozen constants: {', '.join(frozen)}" if frozen else ""))
    np.savez(os.path.join(work, "weights.npz"), **{k: v.detach().numpy() for k, v in model.state_dict().items()})
    batches = sorted(os.path.join(batch_root, d) for d in os.listdir(batch_root)
                     if os.path.isdir(os.path.join(batch_root, d)))
    initializer_names = {x.name for x in onnx_model.graph.initializer}
    graph_inputs = [i.name for i in onnx_model.graph.input if i.name not in initializer_names]
    first = {n: read_pb(os.path.join(batches[0], n + ".pb")) for n in graph_inputs}
    meta = {"workload": workload, "model": model_path, "batches": batches, "inputs": graph_inputs,
            "trainable": trainable, "frozen": frozen, "untie": untie, "loss_output": output, "notes": notes}
    with open(os.path.join(work, "meta.json"), "w") as f:
        json.dump(meta, f, indent=1)
    with open(os.path.join(work, "desc.yaml"), "w") as f:
        f.write(description(meta, first))
    print(json.dumps({"ok": True, "notes": notes}))


def fnmatch_escape(name):
    """ort_train's trainable.exclude entries are fnmatch globs: make a name match only itself."""
    return "".join(f"[{c}]" if c in "*?[" else c for c in name)


def description(meta, first):
    """ort_train's model description: the inputs, labels (a graph input, read by the loss
    inside the model), the model's loss output, the frozen constants and the optimizer."""
    def decl(n):
        dtype = {"float32": "float32", "int64": "int64", "int32": "int32"}[str(first[n].dtype)]
        return f"  - {{name: {n}, dtype: {dtype}, shape: [{', '.join(map(str, first[n].shape))}]}}\n"
    text = "# Written by bench/bench_peers.py\ninputs:\n"
    text += "".join(decl(n) for n in meta["inputs"] if n != "labels")
    text += "labels:\n" + decl("labels")
    text += f"loss: {{output: {meta['loss_output']}}}\n"
    if meta["frozen"]:
        text += "trainable:\n  exclude:\n" + "".join(f"    - {json.dumps(fnmatch_escape(n))}\n" for n in meta["frozen"])
    text += (f"optimizer: {{name: AdamW, lr: {LR}, betas: [{BETAS[0]}, {BETAS[1]}], eps: {EPS}, "
             f"weight_decay: {WEIGHT_DECAY}}}\n")
    return text


def read_pb(path):
    import onnx
    from onnx import numpy_helper
    return numpy_helper.to_array(onnx.load_tensor(path))


def load_meta(workdir):
    with open(os.path.join(workdir, "meta.json")) as f:
        return json.load(f)


# ----------------------------------------------------------------------------
# Step 2 (worker, ONNX Runtime venv): training artifacts
# ----------------------------------------------------------------------------

def import_ort_training():
    """onnxruntime/training/__init__.py imports torch (for ORTModule), which the ORT venv
    does not have: register the package without running its __init__, so the
    artifacts and api submodules import on their own."""
    import types
    import onnxruntime
    if "onnxruntime.training" not in sys.modules:
        pkg = types.ModuleType("onnxruntime.training")
        pkg.__path__ = [os.path.join(os.path.dirname(onnxruntime.__file__), "training")]
        sys.modules["onnxruntime.training"] = pkg
    return onnxruntime


def worker_ort_artifacts(args):
    import onnx
    onnxruntime = import_ort_training()
    onnxruntime.set_default_logger_severity(3)  # errors only: its graph transformers log at info
    from onnxruntime.training import artifacts, onnxblock
    from onnxruntime.training.onnxblock import _graph_utils
    from onnxruntime.training.onnxblock.optim.optim import AdamWOptimizer
    meta = load_meta(args.workdir)

    class TorchModeAdamWNode(AdamWOptimizer):
        """ORT's AdamWOptimizer op with adam_mode 0 (torch.optim.AdamW's update);
        onnxblock's own AdamW block always writes adam_mode 1 (Hugging Face's)."""

        def build(self, lr, step, params, grads, m1, m2):
            return self._build_optimizer_node(
                [lr, step, params, grads, m1, m2], _graph_utils.generate_graph_name("adamw.updated_flag"),
                "AdamWOptimizer", {"alpha": self._betas[0], "beta": self._betas[1], "epsilon": self._eps,
                                   "weight_decay": self._weight_decay, "correct_bias": 1, "adam_mode": 0})

    class TorchModeAdamW(onnxblock.optim.AdamW):
        def __init__(self):
            super().__init__(bias_correction=True, betas=BETAS, eps=EPS, weight_decay=WEIGHT_DECAY)
            self._adamw = TorchModeAdamWNode(bias_correction=True, betas=BETAS, eps=EPS, weight_decay=WEIGHT_DECAY)

    out = os.path.join(args.workdir, "ort_artifacts")
    os.makedirs(out, exist_ok=True)
    # torch.onnx leaves out optional outputs that ORT's gradient builders read (SoftmaxCrossEntropyLoss's
    # log_prob, LayerNormalization's Mean and InvStdDev, Dropout's mask): name them. Nothing reads them in
    # the forward graph, so the model is unchanged.
    optional_outputs = {"SoftmaxCrossEntropyLoss": ["log_prob"], "LayerNormalization": ["mean", "inv_std_dev"],
                        "Dropout": ["mask"]}
    model = onnx.load(meta["model"])
    for node in model.graph.node:
        extra = optional_outputs.get(node.op_type, [])
        while len(node.output) < 1 + len(extra):
            node.output.append(f"{node.output[0]}_{extra[len(node.output) - 1]}")
    # Symbolic input dims (the HF export's batch and seq) make ORT 1.19's gradient builder miss the
    # broadcast of the position embeddings over the batch in BertEmbeddings' Add: the gradient of the
    # [1, seq, hidden] operand is taken as Identity, not summed over the batch, and the embedding gradients
    # come out wrong. The batches have one fixed shape: write it into the graph inputs.
    first = load_batches(meta)[0]
    for value in model.graph.input:
        if value.name in first:
            for dim, size in zip(value.type.tensor_type.shape.dim, first[value.name].shape):
                if dim.dim_param or not dim.dim_value:
                    dim.Clear()
                    dim.dim_value = size
    model_path = os.path.join(args.workdir, "model_for_ort.onnx")
    onnx.save(model, model_path)
    del model
    # loss=None: the model computes its own loss (the same graph ort_train trains); only that output is the loss.
    artifacts.generate_artifacts(model_path, requires_grad=meta["trainable"], frozen_params=meta["frozen"],
                                 loss=None, optimizer=TorchModeAdamW(), artifact_directory=out,
                                 loss_input_names=[meta["loss_output"]])
    # The eval model turns BatchNormalization's training mode off but keeps its running-statistics outputs,
    # which ORT 1.19 then refuses to load ("should be 1 when Training_mode = False"): nothing reads them there.
    eval_path = os.path.join(out, "eval_model.onnx")
    evaluation = onnx.load(eval_path)
    read = {i for n in evaluation.graph.node for i in n.input} | {o.name for o in evaluation.graph.output}
    changed = False
    for node in evaluation.graph.node:
        training = next((a.i for a in node.attribute if a.name == "training_mode"), 0)
        if node.op_type == "BatchNormalization" and not training and len(node.output) > 1 and \
                not any(o in read for o in node.output[1:]):
            del node.output[1:]
            changed = True
    if changed:
        onnx.save(evaluation, eval_path)
    print(json.dumps({"ok": True}))


# ----------------------------------------------------------------------------
# Step 3 (workers): one training run, printing its losses and step times as JSON
# ----------------------------------------------------------------------------

def load_batches(meta):
    return [{n: read_pb(os.path.join(d, n + ".pb")) for n in meta["inputs"]} for d in meta["batches"]]


def worker_ort(args):
    onnxruntime = import_ort_training()
    onnxruntime.set_default_logger_severity(3)
    from onnxruntime.training.api import CheckpointState, Module, Optimizer
    meta = load_meta(args.workdir)
    art = os.path.join(args.workdir, "ort_artifacts")
    so = onnxruntime.SessionOptions()
    so.intra_op_num_threads = args.threads
    so.inter_op_num_threads = 1
    state = CheckpointState.load_checkpoint(os.path.join(art, "checkpoint"))
    module = Module(os.path.join(art, "training_model.onnx"), state, os.path.join(art, "eval_model.onnx"),
                    device="cpu", session_options=so)
    optimizer = Optimizer(os.path.join(art, "optimizer_model.onnx"), module)
    optimizer.set_learning_rate(LR)
    module.train()
    order = module.input_names()
    batches = [[onnxruntime.OrtValue.ortvalue_from_numpy(b[n]) for n in order] for b in load_batches(meta)]
    losses, times = [], []
    for i in range(args.warmup + args.steps):
        t = time.perf_counter()
        out = module(*batches[i % len(batches)])
        optimizer.step()
        module.lazy_reset_grad()
        times.append((time.perf_counter() - t) * 1000)
        loss = out[0] if isinstance(out, tuple) else out
        losses.append(float(loss.numpy()))
    version = f"onnxruntime-training {onnxruntime.__version__}"
    print(json.dumps({"losses": losses, "step_ms": times, "version": version}))


def worker_torch(args):
    import numpy as np
    import torch
    torch.set_num_threads(args.threads)
    meta = load_meta(args.workdir)
    model = torch_model(meta["workload"], meta)
    weights = np.load(os.path.join(args.workdir, "weights.npz"))
    model.load_state_dict({k: torch.from_numpy(weights[k]) for k in weights.files}, strict=True)
    model.train()
    opt = torch.optim.AdamW(model.parameters(), lr=LR, betas=BETAS, eps=EPS, weight_decay=WEIGHT_DECAY)
    run = torch.compile(model) if args.compile else model
    batches = [[torch.from_numpy(b[n]) for n in meta["inputs"]] for b in load_batches(meta)]
    # bf16: the forward under CPU autocast, the backward outside it (as its documentation does).
    autocast = (torch.autocast("cpu", dtype=torch.bfloat16) if args.precision == "bf16"
                else contextlib.nullcontext())
    losses, times = [], []
    for i in range(args.warmup + args.steps):
        t = time.perf_counter()
        opt.zero_grad(set_to_none=True)
        with autocast:
            out = run(*batches[i % len(batches)])
        loss = out[0] if isinstance(out, tuple) else out  # the HF wrapper returns (loss, logits)
        loss.backward()
        opt.step()
        times.append((time.perf_counter() - t) * 1000)
        losses.append(loss.item())
    version = (f"PyTorch {torch.__version__}" + (" torch.compile" if args.compile else "") +
               (" autocast bf16" if args.precision == "bf16" else ""))
    result = {"losses": losses, "step_ms": times, "version": version}
    if args.compile:
        result["compile_s"] = times[0] / 1000  # the first step compiles forward and backward
    print(json.dumps(result))


def worker_sgemm(args):
    """sgemm rate: 1024x1024 float32 matmuls at --threads threads, median of 20 after warm-up."""
    import torch
    torch.set_num_threads(args.threads)
    a, b = torch.randn(1024, 1024), torch.randn(1024, 1024)
    c = torch.empty(1024, 1024)
    for _ in range(5):
        torch.mm(a, b, out=c)
    times = []
    for _ in range(20):
        t = time.perf_counter()
        torch.mm(a, b, out=c)
        times.append(time.perf_counter() - t)
    gflops = 2 * 1024 ** 3 / statistics.median(times) / 1e9
    print(json.dumps({"gflops": gflops, "by": f"PyTorch {torch.__version__} torch.mm 1024x1024 float32"}))


# ----------------------------------------------------------------------------
# The driver
# ----------------------------------------------------------------------------

def wait_for_compilers(args):
    """Blocks while a compiler or linker runs on the machine (another build would skew timings)."""
    waited, last_note = 0, -60
    if args.no_compiler_wait:
        return 0
    while True:
        ps = subprocess.run(["ps", "-eo", "comm=,args="], capture_output=True, text=True).stdout
        busy = set()
        for line in ps.splitlines():
            parts = line.split(None, 1)
            if not parts:
                continue
            names = {parts[0]}
            if len(parts) > 1 and parts[1].split():
                names.add(os.path.basename(parts[1].split()[0]))
            for n in names:
                if n in COMPILERS or n.endswith(("-ld", "-ld.bfd", "-ld.gold")) or n.startswith("clang-"):
                    busy.add(n)
        if not busy:
            return waited
        if waited - last_note >= 60:
            log(f"waiting: a compiler is running ({', '.join(sorted(busy))}), {waited} s so far")
            last_note = waited
        time.sleep(5)
        waited += 5


def log(msg):
    print(f"[bench_peers {time.strftime('%H:%M:%S')}] {msg}", file=sys.stderr, flush=True)


def python_for(framework, workload, args):
    """The interpreter running a framework's worker, or (None, reason) when it is not installed."""
    if framework == "ort":
        p = os.path.join(VENV, "ort", "bin", "python")
    elif framework in ("torch", "torch-compile"):
        p = os.path.join(VENV, "torch", "bin", "python")
    elif framework == "torch-debian":
        p = args.hf_python if workload == "bert-base-hf" else "/usr/bin/python3"
    else:
        return None, None
    if not os.access(p, os.X_OK):
        hint = ("run bash bench/install_peers.sh" if VENV in p else
                "see tools/export_hf_models.py's docstring" if workload == "bert-base-hf" else
                "run tools/install_deps.sh --python")
        return None, f"{p} not found ({hint})"
    return p, None


def run_measured(cmd, what):
    """bench_forward.measured(), with a failure returned instead of ending the script."""
    try:
        out, err, rss = bench_forward.measured(cmd, what)
        return out, err, rss, None
    except SystemExit as e:
        return None, None, None, str(e.code)


def run_framework(framework, workload, work, args):
    """One run; returns {"ms": median timed step, "rss": MiB, "losses": [...], ...} or {"error": ...}."""
    total = args.warmup + args.steps
    if framework in ("ort_train", "ort_train-fp32", "ort_train-measured"):
        metrics = os.path.join(work, "ort_train_metrics.jsonl")
        if os.path.exists(metrics):
            os.remove(metrics)
        meta = load_meta(work)
        cmd = [args.ort_train, "--log-level", "warn", "train", "--model", meta["model"],
               "--config", os.path.join(work, "desc.yaml"), "--data", os.path.dirname(meta["batches"][0]),
               "--optimizer", "AdamW", "--lr", str(LR), "--steps", str(total), "--threads", str(args.threads),
               "--device", "cpu", "--metrics", metrics,
               "--precision", "fp32" if framework == "ort_train-fp32" else args.precision]
        if framework == "ort_train-measured":
            cmd += ["--gemm-library", "measured"]
        out, err, rss, error = run_measured(cmd, f"{framework} ({workload})")
        if error:
            return {"error": error}
        rows = [json.loads(line) for line in open(metrics) if line.strip()]
        result = {"losses": [r["loss"] for r in rows], "step_ms": [r["step_ms"] for r in rows],
                  "version": args.ort_train_version}
    else:
        python, _ = python_for(framework, workload, args)
        role = "ort" if framework == "ort" else "torch"
        cmd = [python, os.path.abspath(__file__), "--role", role, "--workdir", work, "--threads", str(args.threads),
               "--steps", str(args.steps), "--warmup", str(args.warmup), "--precision", args.precision]
        if framework == "torch-compile":
            cmd.append("--compile")
        out, err, rss, error = run_measured(cmd, f"{framework} ({workload})")
        if error:
            return {"error": error}
        result = json.loads(out.strip().splitlines()[-1])
    if len(result["step_ms"]) != total:
        return {"error": f"{len(result['step_ms'])} steps reported, {total} expected"}
    result["ms"] = statistics.median(result["step_ms"][args.warmup:])
    result["rss"] = rss
    return result


def helper(python, role, args, extra=(), what=""):
    """Runs an untimed worker step (export, artifacts, sgemm); returns its last JSON line."""
    cmd = [python, os.path.abspath(__file__), "--role", role, "--threads", str(args.threads)] + list(extra)
    r = subprocess.run(cmd, capture_output=True, text=True)
    if r.returncode != 0:
        sys.exit(f"{what or role} failed (exit {r.returncode}):\n{r.stdout[-3000:]}\n{r.stderr[-5000:]}")
    return json.loads(r.stdout.strip().splitlines()[-1])


def rel_diff(a, b):
    return abs(a - b) / max(abs(b), 1e-12)


def fmt_ms(ms):
    return f"{ms:.1f}" if ms >= 100 else f"{ms:.2f}" if ms >= 1 else f"{ms:.3f}"


def cpu_model():
    try:
        for line in open("/proc/cpuinfo"):
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown CPU"


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--workloads", default=",".join(WORKLOADS), help="comma-separated: " + ", ".join(WORKLOADS))
    ap.add_argument("--frameworks", help="comma-separated: " + ", ".join(FRAMEWORKS) + " (default: " +
                    "; ".join(f"{p}: {','.join(f)}" for p, f in DEFAULT_FRAMEWORKS.items()) + ")")
    ap.add_argument("--precision", choices=["fp32", "bf16"], default="fp32",
                    help="bf16: ort_train --precision bf16 and PyTorch under torch.autocast('cpu', bfloat16)")
    ap.add_argument("--rounds", type=int, default=3, help="every framework once per round, order rotated")
    ap.add_argument("--steps", type=int, default=20, help="timed steps per run")
    ap.add_argument("--warmup", type=int, default=3, help="untimed steps before them")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--ort-train", default=os.path.join(ROOT, "build", "ort_train"))
    ap.add_argument("--loss-rtol", type=float,
                    help="largest relative difference of a first-five loss from ort_train's (default: " +
                    ", ".join(f"{p} {t:g}" for p, t in DEFAULT_LOSS_RTOL.items()) + ")")
    ap.add_argument("--hf-python", default="/work/venv_hf/bin/python",
                    help="Python with transformers 4.36.2 over Debian's torch (exports bert-base-hf; its "
                         "torch-debian row)")
    ap.add_argument("--hf-export", help="reuse this tools/export_hf_models.py --size base output "
                    "(a bert_opset14 folder) instead of exporting again")
    ap.add_argument("--workdir", help="keep the exports here (default: a temporary folder, removed)")
    ap.add_argument("--no-compiler-wait", action="store_true",
                    help="do not wait for running compilers before each run (smoke tests only: timings then "
                         "mean little, and the report says so)")
    # Worker roles (the driver runs this file under other interpreters).
    ap.add_argument("--role", choices=["prepare", "ort-artifacts", "ort", "torch", "sgemm"], help=argparse.SUPPRESS)
    ap.add_argument("--workload", help=argparse.SUPPRESS)
    ap.add_argument("--compile", action="store_true", help=argparse.SUPPRESS)
    args = ap.parse_args()
    roles = {"prepare": worker_prepare, "ort-artifacts": worker_ort_artifacts, "ort": worker_ort,
             "torch": worker_torch, "sgemm": worker_sgemm}
    if args.role:
        return roles[args.role](args)

    workloads = [w for w in args.workloads.split(",") if w]
    frameworks = [f for f in (args.frameworks or ",".join(DEFAULT_FRAMEWORKS[args.precision])).split(",") if f]
    if args.loss_rtol is None:
        args.loss_rtol = DEFAULT_LOSS_RTOL[args.precision]
    if args.precision == "bf16" and "ort" in frameworks:
        ap.error("ONNX Runtime's CPU training has no bfloat16 mixed precision: leave ort out at --precision bf16")
    for w in workloads:
        if w not in WORKLOADS:
            ap.error(f"unknown workload {w} (choose from {', '.join(WORKLOADS)})")
    for f in frameworks:
        if f not in FRAMEWORKS:
            ap.error(f"unknown framework {f} (choose from {', '.join(FRAMEWORKS)})")
    if args.rounds < 1 or args.steps < 1 or args.warmup < 0:
        ap.error("--rounds and --steps must be at least 1, --warmup at least 0")
    if "torch-compile" in frameworks and args.warmup < 1:
        ap.error("torch-compile's first step compiles: --warmup must be at least 1 to keep it out of ms/step")
    if any(f.startswith("ort_train") for f in frameworks):
        if not os.access(args.ort_train, os.X_OK):
            sys.exit(f"ort_train binary not found: {args.ort_train} (build it, or pass --ort-train)")
        args.ort_train_version = subprocess.run([args.ort_train, "--version"], capture_output=True,
                                                text=True).stdout.splitlines()[0]
    if not os.access("/usr/bin/python3", os.X_OK):
        sys.exit("/usr/bin/python3 (Debian's, with torch 1.13 and onnx) exports the models: "
                 "run tools/install_deps.sh --python")
    os.environ["OMP_NUM_THREADS"] = os.environ["MKL_NUM_THREADS"] = str(args.threads)
    command = "python3 bench/bench_peers.py " + " ".join(shlex.quote(a) for a in sys.argv[1:])

    # This machine's sgemm rate, for the roofline bound.
    sgemm_python = next((p for p in [os.path.join(VENV, "torch", "bin", "python"), "/usr/bin/python3"]
                         if os.access(p, os.X_OK)))
    wait_for_compilers(args)
    sgemm = helper(sgemm_python, "sgemm", args, what="sgemm measurement")
    log(f"sgemm: {sgemm['gflops']:.1f} GFLOP/s ({sgemm['by']}, {args.threads} threads)")

    # Every workload's exporter is checked before the first is timed: a missing
    # one found after minutes of measuring would throw those minutes away.
    def prep_python_of(workload):
        if workload == "resnet18":  # numpy and onnx only: either venv has them
            return next((p for p in (os.path.join(VENV, v, "bin", "python") for v in ("torch", "ort"))
                         if os.access(p, os.X_OK)), sys.executable)
        return args.hf_python if workload == "bert-base-hf" else "/usr/bin/python3"
    for workload in workloads:
        if not os.access(prep_python_of(workload), os.X_OK):
            sys.exit(f"{workload}: {prep_python_of(workload)} not found: it exports this workload (see --hf-python, "
                     f"or leave it out with --workloads)")
    root = args.workdir or tempfile.mkdtemp(prefix="bench_peers.")
    results, skipped, notes, failures = {}, {}, {}, []
    try:
        for workload in workloads:
            work = os.path.join(root, workload)
            os.makedirs(work, exist_ok=True)
            prep_python = prep_python_of(workload)
            log(f"{workload}: exporting")
            extra = ["--workload", workload, "--workdir", work]
            if args.hf_export and workload == "bert-base-hf":
                extra += ["--hf-export", args.hf_export]
            notes[workload] = helper(prep_python, "prepare", args, extra, f"{workload} export")["notes"]
            runnable = []
            for f in frameworks:
                python, reason = python_for(f, workload, args)
                if reason:
                    skipped[(workload, f)] = reason
                    log(f"{workload}: skipping {f}: {reason}")
                else:
                    runnable.append(f)
            if "ort" in runnable:
                log(f"{workload}: generating ONNX Runtime training artifacts")
                helper(python_for("ort", workload, args)[0], "ort-artifacts", args, ["--workdir", work],
                       f"{workload} ORT artifacts")
            runs = {f: [] for f in runnable}
            for r in range(args.rounds):
                order = runnable[r % len(runnable):] + runnable[:r % len(runnable)]
                for f in order:
                    wait_for_compilers(args)
                    res = run_framework(f, workload, work, args)
                    runs[f].append(res)
                    if "error" in res:
                        log(f"{workload} round {r + 1}: {f} FAILED: {res['error'][-2000:]}")
                        failures.append(f"{workload}: {f} failed: {res['error'].splitlines()[0][:300]}")
                    else:
                        log(f"{workload} round {r + 1}/{args.rounds}: {f}: {fmt_ms(res['ms'])} ms/step, "
                            f"peak RSS {res['rss']:.0f} MiB, losses {', '.join(f'{x:.6f}' for x in res['losses'][:5])}")
            results[workload] = runs
    finally:
        if not args.workdir:
            subprocess.run(["rm", "-rf", root])

    # ---- the report ----
    mismatches = []
    lines = [f"Command: `{command}`", "",
             f"Machine: {cpu_model()}, {os.cpu_count()} cores; {args.threads} threads for every framework; "
             f"{datetime.date.today().isoformat()}. AdamW (torch's update: lr {LR}, betas {BETAS[0]}/{BETAS[1]}, "
             f"eps {EPS}, weight decay {WEIGHT_DECAY} on every parameter), Dropout off, the same exported model, "
             f"weights and batches everywhere. {args.rounds} round(s), each framework once per round in rotated "
             f"order; a round's value is the median of {args.steps} timed steps after {args.warmup} warm-up steps; "
             "ms/step is the median over rounds, [min, max] their range. Roofline bound: GEMM FLOPs per step "
             f"(forward GEMMs x3) / sgemm rate {sgemm['gflops']:.1f} GFLOP/s ({sgemm['by']}, {args.threads} threads)."
             + (" Precision bf16: ort_train --precision bf16 (its GEMMs and their gradients in bfloat16 with "
                "float32 accumulation, the rest float32; graph/passes/autocast.h); PyTorch's forward under "
                "torch.autocast('cpu', dtype=torch.bfloat16), its backward outside; ort_train fp32 is the same "
                "binary without it. The roofline bound stays the float32 one." if args.precision == "bf16" else "")
             + (" Run with --no-compiler-wait: other builds may have run alongside, timings are unreliable."
                if args.no_compiler_wait else "")]
    for workload, runs in results.items():
        bound_ms = 3 * gemm_flops(workload) / (sgemm["gflops"] * 1e9) * 1000
        lines += ["", f"### {workload}: {DESCRIBE[workload]}", "",
                  f"GEMM work per step {3 * gemm_flops(workload) / 1e9:.2f} GFLOP -> roofline bound "
                  f"{fmt_ms(bound_ms)} ms/step.", ""]
        for n in notes.get(workload, []):
            lines.append(f"- {n}")
        lines += ["", "| framework | version | ms/step | [min, max] | samples/s | time / ort_train | x bound | "
                  "peak RSS MiB | losses 1-5 |", "|---|---|---|---|---|---|---|---|---|"]
        ok = {f: [x for x in rs if "error" not in x] for f, rs in runs.items()}
        summary = {}
        for f, rs in ok.items():
            if rs:
                ms = [x["ms"] for x in rs]
                summary[f] = (statistics.median(ms), min(ms), max(ms), max(x["rss"] for x in rs))
        ref_name = "ort_train" if "ort_train" in ok and ok["ort_train"] else next((f for f in ok if ok[f]), None)
        ref = ok[ref_name][0]["losses"][:5] if ref_name else []
        worst = {}
        for f, rs in ok.items():
            for i, x in enumerate(rs):
                for step, (a, b) in enumerate(zip(x["losses"][:5], ref)):
                    d = rel_diff(a, b)
                    worst[f] = max(worst.get(f, 0.0), d)
                    if d > (args.loss_rtol if step == 0 else max(args.loss_rtol, LATER_LOSS_RTOL.get(workload, 0))):
                        mismatches.append((workload, f, i + 1, step + 1, a, b, d))
        for f in runs:
            if f not in summary:
                err = next((x["error"] for x in runs[f] if "error" in x), "no result")
                lines.append(f"| {LABELS[f]} | failed: {err.splitlines()[0][:120]} | | | | | | | |")
                continue
            med, lo, hi, rss = summary[f]
            ratio = f"{med / summary['ort_train'][0]:.2f}" if "ort_train" in summary else "-"
            losses = ", ".join(f"{v:.5f}" for v in ok[f][0]["losses"][:5])
            lines.append(f"| {LABELS[f]} | {ok[f][0]['version']} | {fmt_ms(med)} | [{fmt_ms(lo)}, {fmt_ms(hi)}] | "
                         f"{BATCH[workload] * 1000 / med:.1f} | {ratio} | {med / bound_ms:.1f} | {rss:.0f} | "
                         f"{losses} |")
        for (w, f), reason in skipped.items():
            if w == workload:
                lines.append(f"| {LABELS[f]} | skipped: {reason} | | | | | | | |")
        peers = {f: s for f, s in summary.items() if not f.startswith("ort_train")}
        lines.append("")
        if peers:
            fastest = min(peers, key=lambda f: peers[f][0])
            line = f"Fastest peer: {LABELS[fastest]} ({fmt_ms(peers[fastest][0])} ms/step"
            if "ort_train" in summary:
                line += f", {peers[fastest][0] / summary['ort_train'][0]:.2f}x ort_train's time"
            lines.append(line + ").")
        if "torch-compile" in ok and ok["torch-compile"]:
            cs = [x["compile_s"] for x in ok["torch-compile"]]
            lines.append(f"torch.compile: first step (compiling forward and backward) {statistics.median(cs):.1f} s "
                         f"(median over rounds; later rounds may reuse the compile cache), not in ms/step.")
        if ref_name:
            lines.append(f"First five losses vs {ref_name}'s (round 1), worst relative difference over all rounds: "
                         + ", ".join(f"{LABELS[f]} {worst.get(f, 0):.1e}" for f in ok if ok[f]) +
                         f" (tolerance {args.loss_rtol:g}" +
                         (f"; after the first loss {LATER_LOSS_RTOL[workload]:g}, see LATER_LOSS_RTOL"
                          if workload in LATER_LOSS_RTOL else "") + ").")
            first = {f: ok[f][0]["losses"][0] for f in ok if ok[f]}
            lines.append("First loss (before any update): " + ", ".join(f"{LABELS[f]} {v:.7f}"
                                                                          for f, v in first.items()) + ".")
    print("\n".join(lines))

    status = 0
    if mismatches:
        status = 1
        print(f"\nLOSS MISMATCH: first-five losses differ from the reference beyond --loss-rtol {args.loss_rtol:g}:\n")
        print("| workload | framework | round | step | loss | reference | relative difference |")
        print("|---|---|---|---|---|---|---|")
        for w, f, r, s, a, b, d in mismatches:
            print(f"| {w} | {f} | {r} | {s} | {a:.8f} | {b:.8f} | {d:.2e} |")
    if failures:
        status = 1
        print("\nFAILED RUNS:\n" + "\n".join(f"- {x}" for x in failures))
    return status


if __name__ == "__main__":
    sys.exit(main())
