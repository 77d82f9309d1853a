#!/usr/bin/env python3
"""Writes torchvision's ResNet-18 (10 classes) as ONNX with BatchNormalization
in training mode, and its training description, without PyTorch: the CNN of
issue 54's CPU measurements (ResNet-18 at 32x32, batch 32).

The layers are torchvision.models.resnet18's: a 7x7 stride-2 convolution,
3x3 max pool, four stages of two BasicBlocks (64, 128, 256, 512 channels; a
1x1 stride-2 convolution and BatchNorm on the shortcut where the shape
changes), global average pool and a 512x10 linear layer. Convolutions have no
bias; weights are kaiming-normal (fan_out, ReLU) as torchvision initializes
them, BatchNorm 1 and 0, from a fixed seed.

    python3 bench/make_resnet18.py OUT_DIR [--size 32] [--batch 32]

needs numpy and onnx (pip install onnx numpy).
"""
import argparse
import os

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper


class Builder:
    def __init__(self, seed):
        self.rng = np.random.default_rng(seed)
        self.nodes, self.inits, self.frozen = [], [], []
        self.count = 0

    def name(self, hint):
        self.count += 1
        return f"{hint}_{self.count}"

    def conv(self, x, prefix, cin, cout, k, stride, pad):
        w = self.rng.standard_normal((cout, cin, k, k)) * np.sqrt(2.0 / (cout * k * k))
        self.inits.append(numpy_helper.from_array(w.astype(np.float32), f"{prefix}.weight"))
        y = self.name(prefix + "/conv")
        self.nodes.append(helper.make_node("Conv", [x, f"{prefix}.weight"], [y], name=y, kernel_shape=[k, k],
                                           strides=[stride, stride], pads=[pad] * 4))
        return y

    def bn(self, x, prefix, c):
        for suffix, value in (("weight", 1.0), ("bias", 0.0), ("running_mean", 0.0), ("running_var", 1.0)):
            self.inits.append(numpy_helper.from_array(np.full((c,), value, np.float32), f"{prefix}.{suffix}"))
        self.frozen += [f"{prefix}.running_mean", f"{prefix}.running_var"]
        y = self.name(prefix + "/bn")
        outs = [y, self.name(prefix + "/mean"), self.name(prefix + "/var")]
        self.nodes.append(helper.make_node("BatchNormalization", [x] + [f"{prefix}.{s}" for s in
                                           ("weight", "bias", "running_mean", "running_var")], outs, name=y,
                                           epsilon=1e-5, momentum=0.9, training_mode=1))
        return y

    def op(self, op, inputs, **attrs):
        y = self.name(op)
        self.nodes.append(helper.make_node(op, inputs, [y], name=y, **attrs))
        return y

    def block(self, x, prefix, cin, cout, stride):
        h = self.op("Relu", [self.bn(self.conv(x, prefix + ".conv1", cin, cout, 3, stride, 1), prefix + ".bn1", cout)])
        h = self.bn(self.conv(h, prefix + ".conv2", cout, cout, 3, 1, 1), prefix + ".bn2", cout)
        if stride != 1 or cin != cout:
            x = self.bn(self.conv(x, prefix + ".downsample.0", cin, cout, 1, stride, 0), prefix + ".downsample.1", cout)
        return self.op("Relu", [self.op("Add", [h, x])])


def build(size=32, seed=0):
    """ResNet-18's ONNX model (image [batch, 3, size, size] -> logits [batch, 10]) and the
    names of its BatchNorm running statistics (not trained)."""
    b = Builder(seed)
    x = b.op("Relu", [b.bn(b.conv("image", "conv1", 3, 64, 7, 2, 3), "bn1", 64)])
    x = b.op("MaxPool", [x], kernel_shape=[3, 3], strides=[2, 2], pads=[1, 1, 1, 1])
    cin = 64
    for stage, cout in enumerate((64, 128, 256, 512), start=1):
        for i in range(2):
            x = b.block(x, f"layer{stage}.{i}", cin, cout, 2 if stage > 1 and i == 0 else 1)
            cin = cout
    x = b.op("Flatten", [b.op("GlobalAveragePool", [x])], axis=1)
    bound = 1 / np.sqrt(512)
    b.inits.append(numpy_helper.from_array(b.rng.uniform(-bound, bound, (10, 512)).astype(np.float32), "fc.weight"))
    b.inits.append(numpy_helper.from_array(b.rng.uniform(-bound, bound, (10,)).astype(np.float32), "fc.bias"))
    b.nodes.append(helper.make_node("Gemm", [x, "fc.weight", "fc.bias"], ["logits"], name="fc", transB=1))
    graph = helper.make_graph(
        b.nodes, "resnet18", [helper.make_tensor_value_info("image", TensorProto.FLOAT, ["batch", 3, size, size])],
        [helper.make_tensor_value_info("logits", TensorProto.FLOAT, ["batch", 10])], b.inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], producer_name="bench/make_resnet18.py")
    model.ir_version = 8
    onnx.checker.check_model(model)
    return model, b.frozen


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("out")
    ap.add_argument("--size", type=int, default=32)
    ap.add_argument("--batch", type=int, default=32)
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args()
    model, frozen = build(args.size, args.seed)
    os.makedirs(args.out, exist_ok=True)
    onnx.save_model(model, os.path.join(args.out, "model.onnx"))
    with open(os.path.join(args.out, "training.yaml"), "w") as f:
        f.write(f"inputs:\n  - {{name: image, dtype: float32, shape: [batch, 3, {args.size}, {args.size}]}}\n"
                "labels:\n  - {name: labels, dtype: int64, shape: [batch], range: [0, 10]}\n"
                "loss: {type: softmax_cross_entropy, input: logits, target: labels, reduction: mean}\n"
                f"batch_size: {args.batch}\n"
                f"trainable:\n  exclude: [{', '.join(repr(n) for n in frozen)}]\n")
    params = sum(int(np.prod(t.dims)) for t in model.graph.initializer if t.name not in frozen)
    print(f"wrote {args.out}/model.onnx: ResNet-18, {params:,} trainable parameters, {args.size}x{args.size}, batch {args.batch}")


if __name__ == "__main__":
    main()
