#!/usr/bin/env python3
"""Small models as today's PyTorch exports them, with PyTorch's own training
trajectories, for tests/models/dynamo (issue 49).

Since torch 2.9 a plain torch.onnx.export(model, args, "m.onnx") is the
dynamo exporter, with its optimizer on. Each model here is exported three ways:
  optimize/  the exporter's defaults (folds constants, merges equal-valued
             initializers, folds Linear weights into transposes);
  plain/     optimize=False;
  helper/    tools/export_for_training.py (optimize=False plus a description
             of the trainable set, padding rows and training-mode BatchNorm).
Each folder holds model.onnx, training.yaml (optimize/ and plain/: nothing
but what the one-liner needs; helper/: the helper's description),
train_batches/0/<input>.pb, and trajectories.json: PyTorch's losses over
10 optimizer steps on that batch, per optimizer configuration, computed on
the module itself (the parameters with requires_grad, PyTorch's own
embedding padding rows and BatchNorm). A file with inference-mode BatchNorm
also has, per configuration, losses_inference_batch_norm: the module's
trajectory with its BatchNorm modules in eval mode, which is what the file
says. Which files ort_train refuses, and why, is the test's table
(tests/models/dynamo_exports_test.cc).

Needs torch >= 2.9 with onnxscript, and transformers 5 (PyPI), in a venv:

    python3 -m venv /tmp/venv && /tmp/venv/bin/pip install torch torchvision onnx onnxscript transformers
    /tmp/venv/bin/python tools/export_dynamo_models.py [--out tests/models/dynamo] [--models causal_lm ...]
"""
import argparse
import copy
import json
import os
import shutil
import sys
import tempfile

import onnx
import torch
from onnx import numpy_helper

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import export_for_training  # noqa: E402
from training_reference import manual_update  # noqa: E402

STEPS = 10
CONFIGS = {
    "lamb_1e-4": {"name": "Lamb", "lr": 1e-4, "weight_decay": 0.01, "betas": [0.9, 0.999], "eps": 1e-6},
    "lamb_1e-2": {"name": "Lamb", "lr": 1e-2, "weight_decay": 0.01, "betas": [0.9, 0.999], "eps": 1e-6},
    "adamw_1e-3": {"name": "AdamW", "lr": 1e-3, "weight_decay": 0.01, "betas": [0.9, 0.999], "eps": 1e-8},
    "sgd_0.1": {"name": "Sgd", "lr": 0.1},
}
VOCAB, SEQ, BATCH = 64, 16, 2


class LossOf(torch.nn.Module):
    """A Hugging Face model with its loss as the only output."""

    def __init__(self, model, image=False):
        super().__init__()
        self.model = model
        self.image = image

    def forward(self, *args):
        if self.image:
            return self.model(pixel_values=args[0], labels=args[1]).loss
        return self.model(input_ids=args[0], attention_mask=args[1], labels=args[2]).loss


def causal_lm():
    model = export_for_training._CausalLM(vocab=VOCAB, dim=32, seq=SEQ)
    ids = torch.randint(1, VOCAB, (BATCH, SEQ))
    return model, (ids, ids.roll(-1, 1)), ["input_ids", "labels"]


def hf_text(make):
    model = LossOf(make())
    ids = torch.randint(1, VOCAB, (BATCH, SEQ))
    return model, (ids, torch.ones_like(ids), ids), ["input_ids", "attention_mask", "labels"]


def gpt2():
    from transformers import GPT2Config, GPT2LMHeadModel
    return hf_text(lambda: GPT2LMHeadModel(GPT2Config(vocab_size=VOCAB, n_embd=32, n_layer=2, n_head=2, n_positions=SEQ,
                                                      resid_pdrop=0.0, embd_pdrop=0.0, attn_pdrop=0.0,
                                                      bos_token_id=1, eos_token_id=2)))


def llama():
    from transformers import LlamaConfig, LlamaForCausalLM
    return hf_text(lambda: LlamaForCausalLM(LlamaConfig(vocab_size=VOCAB, hidden_size=32, intermediate_size=64,
                                                        num_hidden_layers=2, num_attention_heads=2,
                                                        num_key_value_heads=1, max_position_embeddings=SEQ)))


def bert():
    from transformers import BertConfig, BertForMaskedLM
    return hf_text(lambda: BertForMaskedLM(BertConfig(vocab_size=VOCAB, hidden_size=32, num_hidden_layers=2,
                                                      num_attention_heads=2, intermediate_size=64,
                                                      max_position_embeddings=SEQ, hidden_dropout_prob=0.0,
                                                      attention_probs_dropout_prob=0.0)))


def marian():
    """A seq2seq model whose decoder starts from the pad token (row 0 of the
    shared embedding, nn.Embedding(padding_idx=0)), with sinusoidal positions
    that are a requires_grad=False parameter and a final_logits_bias buffer."""
    from transformers import MarianConfig, MarianMTModel
    cfg = MarianConfig(vocab_size=VOCAB, d_model=32, encoder_layers=1, decoder_layers=1, encoder_attention_heads=2,
                       decoder_attention_heads=2, encoder_ffn_dim=64, decoder_ffn_dim=64, max_position_embeddings=SEQ,
                       pad_token_id=0, decoder_start_token_id=0, eos_token_id=1, dropout=0.0, attention_dropout=0.0,
                       activation_dropout=0.0)
    return hf_text(lambda: MarianMTModel(cfg))


class TinyResNet(torch.nn.Module):
    """torchvision's ResNet stem and BasicBlocks at a few channels: Conv,
    BatchNorm in training mode, residual adds, global pooling, a Linear."""

    def __init__(self, classes=10):
        super().__init__()
        from torchvision.models.resnet import BasicBlock
        self.stem = torch.nn.Sequential(torch.nn.Conv2d(3, 8, 3, padding=1, bias=False), torch.nn.BatchNorm2d(8),
                                        torch.nn.ReLU())
        down = torch.nn.Sequential(torch.nn.Conv2d(8, 16, 1, stride=2, bias=False), torch.nn.BatchNorm2d(16))
        self.blocks = torch.nn.Sequential(BasicBlock(8, 8), BasicBlock(8, 16, stride=2, downsample=down))
        self.fc = torch.nn.Linear(16, classes)

    def forward(self, images, labels):
        x = self.blocks(self.stem(images))
        logits = self.fc(torch.flatten(torch.nn.functional.adaptive_avg_pool2d(x, 1), 1))
        return torch.nn.functional.cross_entropy(logits, labels)


def resnet():
    return TinyResNet(), (torch.randn(4, 3, 16, 16), torch.randint(0, 10, (4,))), ["images", "labels"]


class WithCrossEntropy(torch.nn.Module):
    def __init__(self, model):
        super().__init__()
        self.model = model

    def forward(self, images, labels):
        return torch.nn.functional.cross_entropy(self.model(images), labels)


def resnet18():
    """torchvision's ResNet-18 (11.2M parameters, 45 MB: never committed;
    `--models resnet18 --out /tmp/exports`, then tools/train_against_trajectories.py)."""
    from torchvision.models import resnet18 as make
    return WithCrossEntropy(make(num_classes=10)), (torch.randn(4, 3, 32, 32), torch.randint(0, 10, (4,))), \
        ["images", "labels"]


MODELS = {"causal_lm": causal_lm, "gpt2": gpt2, "llama": llama, "bert": bert, "marian": marian, "resnet": resnet}
LARGE = {"resnet18": resnet18}  # by name only
# Marian's plain export would train what PyTorch does not (its sinusoidal
# positions, a requires_grad=False parameter, and its padding row): the
# helper's description is what it needs, and optimize/ shows the refusal.
SKIP = {("marian", "plain")}


def frozen_batch_norm(module):
    for m in module.modules():
        if isinstance(m, torch.nn.modules.batchnorm._BatchNorm):
            m.eval()
    return module


def trajectory(module, args, cfg):
    """PyTorch's losses over STEPS steps of `cfg` on one batch, each before its update."""
    named = [(n, p) for n, p in module.named_parameters() if p.requires_grad]
    params, names = [p for _, p in named], [n for n, _ in named]
    opt = None
    if cfg["name"] == "Sgd":
        opt = torch.optim.SGD(params, lr=cfg["lr"])
    elif cfg["name"] == "AdamW":
        opt = torch.optim.AdamW(params, lr=cfg["lr"], betas=tuple(cfg["betas"]), eps=cfg["eps"],
                                weight_decay=cfg["weight_decay"])
    state, losses = {}, []
    for t in range(1, STEPS + 1):
        module.zero_grad(set_to_none=True)
        loss = module(*args)
        losses.append(loss.item())
        loss.backward()
        if opt:
            opt.step()
        else:
            missing = [n for n, p in named if p.grad is None]
            if missing:
                raise SystemExit(f"parameters without a gradient (Lamb would still decay them): {missing[:4]}")
            manual_update(params, names, state, cfg, cfg["lr"], t)
    return losses


def write_batch(folder, names, args):
    batch = os.path.join(folder, "train_batches", "0")
    os.makedirs(batch)
    for name, value in zip(names, args):
        onnx.save_tensor(numpy_helper.from_array(value.numpy(), name), os.path.join(batch, f"{name}.pb"))


def export_variant(name, variant, build, out_root, float64=False):
    torch.manual_seed(0)
    module, args, input_names = build()
    module.train()
    reference = copy.deepcopy(module)
    tmp = tempfile.mkdtemp(dir=out_root)
    os.chmod(tmp, 0o755)
    path = os.path.join(tmp, "model.onnx")
    header = f"# tools/export_dynamo_models.py: {name}, torch {torch.__version__}'s dynamo exporter, "
    if variant == "helper":
        desc = export_for_training.export_for_training(module, args, path, input_names=input_names,
                                                       description=os.path.join(tmp, "training.yaml"))
        with open(desc) as f:
            text = f.read()
        with open(desc, "w") as f:
            f.write(header + "through tools/export_for_training.py\n" + text.replace("model: model.onnx\n", ""))
    else:
        torch.onnx.export(module, args, path, input_names=input_names, output_names=["loss"], dynamo=True,
                          optimize=variant == "optimize", external_data=False)
        with open(os.path.join(tmp, "training.yaml"), "w") as f:
            f.write(header + f"optimize={variant == 'optimize'}: nothing but what the one-liner needs.\n"
                    "loss: {output: loss}\n")
    write_batch(tmp, input_names, args)
    record = {"steps": STEPS, "torch": torch.__version__, "exporter": "dynamo",
              "optimize": variant == "optimize", "configs": {}}
    for key, cfg in CONFIGS.items():
        record["configs"][key] = {"optimizer": cfg, "losses": trajectory(copy.deepcopy(reference), args, cfg)}
        if float64:  # the exact trajectory, to measure PyTorch's own float32 distance from it
            wide = tuple(a.double() if a.is_floating_point() else a for a in args)
            record["configs"][key]["losses_float64"] = trajectory(copy.deepcopy(reference).double(), wide, cfg)
    has_bn = any(isinstance(m, torch.nn.modules.batchnorm._BatchNorm) for m in reference.modules())
    if has_bn and variant != "helper":  # the file's BatchNorm is in inference mode: train what it says too
        for key, cfg in CONFIGS.items():
            record["configs"][key]["losses_inference_batch_norm"] = trajectory(
                frozen_batch_norm(copy.deepcopy(reference)), args, cfg)
    with open(os.path.join(tmp, "trajectories.json"), "w") as f:
        json.dump(record, f, indent=1)
    dest = os.path.join(out_root, f"{name}_{variant}")
    shutil.rmtree(dest, ignore_errors=True)
    os.rename(tmp, dest)
    print(f"wrote {dest}")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", default=os.path.join(os.path.dirname(__file__), "..", "tests", "models", "dynamo"))
    ap.add_argument("--models", nargs="*", default=list(MODELS), choices=list(MODELS) + list(LARGE))
    ap.add_argument("--variants", nargs="*", default=["optimize", "plain", "helper"])
    ap.add_argument("--float64", action="store_true",
                    help="also record each trajectory in float64 (losses_float64): where float32 rounding grows "
                         "past 1e-5 in 10 steps (ResNet-18 at batch 4 memorizes its batch), what to judge by")
    args = ap.parse_args()
    os.makedirs(args.out, exist_ok=True)
    torch.backends.mkldnn.enabled = False  # Debian torch's oneDNN conv backward is wrong on this CPU; not used here either
    for name in args.models:
        for variant in args.variants:
            if (name, variant) not in SKIP:
                export_variant(name, variant, {**MODELS, **LARGE}[name], args.out, args.float64)


if __name__ == "__main__":
    main()
