#!/usr/bin/python3
"""encoder_check.py -- examples/encoder_client.c against PyTorch 1.13: the client's logit of a
sentence equals the reference classifier's (tools/attn_models.py) on the same weights, and its
encoder run -- every layer's output and attention, the final output -- equals
nn.TransformerEncoderLayer(x, src_key_padding_mask=mask) on the client's input x, bit for bit
(padding rows included). The attention PyTorch uses is recomputed from the layer's own weights
the way F.multi_head_attention_forward does (q / sqrt(E), baddbmm with the -inf mask, softmax).

    encoder_check.py CLIENT WEIGHTS.json [SENTENCE N_PADDING]...

Prints the identical counts per tensor; exit 1 on the first difference.
"""
import json
import math
import os
import subprocess
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tools"))
import blas_core  # noqa: E402,F401 -- before torch: the kernels attn runs on
import torch  # noqa: E402
import weights_json  # noqa: E402


def same(name, got, want):
    got = torch.tensor(got, dtype=torch.float32)
    if got.shape != want.shape:
        sys.exit("%s: shape %s, PyTorch %s" % (name, tuple(got.shape), tuple(want.shape)))
    equal = (got == want) | (torch.isnan(got) & torch.isnan(want))
    if not bool(equal.all()):
        i = int((~equal).flatten().nonzero()[0])
        sys.exit("%s: %d of %d values differ, first at %d: %r vs PyTorch %r" % (
            name, int((~equal).sum()), equal.numel(), i, float(got.flatten()[i]),
            float(want.flatten()[i])))
    return equal.numel()


def attention(layer, x, mask):
    """The probabilities [NH, T, T] the layer's self-attention uses on its input x [T, D]."""
    a = layer.self_attn
    D, NH = a.embed_dim, a.num_heads
    q, k, _ = torch.nn.functional.linear(x, a.in_proj_weight, a.in_proj_bias).chunk(3, dim=-1)
    q = q.reshape(-1, NH, D // NH).transpose(0, 1)
    k = k.reshape(-1, NH, D // NH).transpose(0, 1)
    float_mask = torch.zeros(NH, 1, x.shape[0]).masked_fill_(mask.view(1, 1, -1), float("-inf"))
    scores = torch.baddbmm(float_mask, q / math.sqrt(D // NH), k.transpose(-2, -1))
    return torch.softmax(scores, dim=-1)


def check(client, weights, sentence, n_pad, model):
    out = subprocess.run([client, weights, sentence, str(n_pad)], check=True,
                         capture_output=True, text=True).stdout
    run = json.loads(out)
    counts = {}
    ids = torch.tensor([run["ids"]])
    counts["logit"] = same("logit", [run["logit"]],
                           model(ids, torch.tensor([ids.shape[1]])).detach())
    x = torch.tensor([run["x"]], dtype=torch.float32)
    mask = torch.tensor([run["key_padding"]], dtype=torch.bool)
    counts["output"] = counts["attention"] = 0
    for l, layer in enumerate(model.layers):
        norm_first = layer.norm_first
        probs = attention(layer, layer.norm1(x[0]) if norm_first else x[0], mask[0])
        counts["attention"] += same("layer %d attention" % l, run["layers"][l]["attention"],
                                    probs.detach())
        x = layer(x, src_key_padding_mask=mask)
        counts["output"] += same("layer %d output" % l, run["layers"][l]["output"],
                                 x[0].detach())
    if model.norm is not None:
        x = model.norm(x)
    counts["final"] = same("final output", run["output"], x[0].detach())
    print("%r + %d padding: identical values: %s" % (sentence, n_pad, counts))


def main():
    if len(sys.argv) < 3 or len(sys.argv) % 2 == 0:
        sys.exit(__doc__)
    client, weights = sys.argv[1], sys.argv[2]
    model = weights_json.load(weights)  # requires_grad: PyTorch's reference (not fast) path
    torch.set_num_threads(1)
    pairs = sys.argv[3:] or ["the food was not good", "3"]
    for i in range(0, len(pairs), 2):
        check(client, weights, pairs[i], int(pairs[i + 1]), model)


if __name__ == "__main__":
    main()
