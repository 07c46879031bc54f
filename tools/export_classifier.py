#!/usr/bin/python3
"""export_classifier.py -- your own PyTorch classifier and its word list -> attn-weights-v1 JSON
with its vocabulary, so `attn predict` runs it bit for bit.

The module may name its parts as it likes; it is read by the types of its submodules:
  rnn, lstm, gru   one nn.Embedding(V, E), one nn.RNN (tanh) / nn.LSTM / nn.GRU (E -> H, bias,
                   one direction, no LSTM projection) and one nn.Linear(H, 1). Its forward must
                   be attn's: embed the ids, run the cell, head on the hidden state after the
                   last word.
  transformer      one nn.Embedding(V, D) for the tokens, the positions as an nn.Parameter of
                   shape [P, D] (or [1, P, D]) or a second nn.Embedding(P, D), nn.
                   TransformerEncoderLayer(s) (alone or in an nn.TransformerEncoder; all alike:
                   bias, layer_norm_eps 1e-5, relu or gelu, norm_first or not), a final
                   nn.LayerNorm(D) exactly when norm_first, and one nn.Linear(D, 1). Its forward
                   must be attn's: prepend [CLS] = id 1, add positions 0..T, the layers, the final
                   norm, the head on position 0.
The word list gives token i for embedding row i. attn needs "[PAD]" at id 0 (and, for the
transformer, "[CLS]" at id 1): --pad-token and --cls-token name your tokens for those ids (e.g.
"<pad>"), which are then written as [PAD] and [CLS]. The vocabulary is checked with attn's rules
(weights_json.check_vocab); words the tokenizer cannot produce (upper case, punctuation) stay
reachable with `attn predict --ids`.

Python:  export_classifier.export(module, words, "out.json")
Command: export_classifier.py --module my_model.py:build [--kwargs JSON] [--state-dict W.pt]
                              --vocab words.txt --out out.json [--pad-token T] [--cls-token T]
         (build: a class or function of my_model.py returning the module; words.txt: one token a
         line, line i = id i; W.pt: torch.save(model.state_dict()), loaded strictly.)
"""
import argparse
import importlib.util
import json
import os
import sys

import blas_core  # noqa: E402,F401 -- before torch: attn's OpenBLAS kernels
import torch
import torch.nn as nn
import torch.nn.functional as F

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import weights_json  # noqa: E402

RECURRENT = {nn.RNN: "rnn", nn.LSTM: "lstm", nn.GRU: "gru"}


def _one(found, what):
    if len(found) != 1:
        raise ValueError("expected exactly one %s, found %d" % (what, len(found)))
    return found[0]


def _modules(module, types):
    return [(name, m) for name, m in module.named_modules() if isinstance(m, types)]


def _recurrent(module):
    """-> (config, [(attn name, tensor)]) of an Embedding -> RNN/LSTM/GRU -> Linear(H, 1)."""
    _, emb = _one(_modules(module, nn.Embedding), "nn.Embedding")
    _, cell = _one(_modules(module, tuple(RECURRENT)), "nn.RNN, nn.LSTM or nn.GRU")
    arch = RECURRENT[type(cell)]
    if not cell.bias or cell.bidirectional or getattr(cell, "proj_size", 0):
        raise ValueError("the %s must have bias=True, bidirectional=False, proj_size=0" % arch)
    if arch == "rnn" and cell.nonlinearity != "tanh":
        raise ValueError("the nn.RNN must use nonlinearity='tanh'")
    if cell.input_size != emb.embedding_dim:
        raise ValueError("the %s takes %d inputs but the embedding has %d columns"
                         % (arch, cell.input_size, emb.embedding_dim))
    heads = [m for _, m in _modules(module, nn.Linear)
             if m.out_features == 1 and m.in_features == cell.hidden_size]
    head = _one(heads, "nn.Linear(%d, 1) head" % cell.hidden_size)
    config = {"arch": arch, "vocab_size": emb.num_embeddings, "embed_dim": emb.embedding_dim,
              "hidden_size": cell.hidden_size, "n_layers": cell.num_layers}
    tensors = [("embedding.weight", emb.weight)]
    tensors += [("%s.%s" % (arch, k), v) for k, v in cell.named_parameters()]
    tensors += [("head.weight", head.weight), ("head.bias", head.bias)]
    return config, tensors


def _activation(layer):
    act = layer.activation
    if act is F.relu or isinstance(act, nn.ReLU) or act == "relu":
        return "relu"
    if act is F.gelu or (isinstance(act, nn.GELU) and act.approximate == "none") or act == "gelu":
        return "gelu"
    raise ValueError("encoder layers must use relu or gelu (erf form), found %r" % (act,))


def _transformer(module, n_words):
    layers = [m for _, m in _modules(module, nn.TransformerEncoderLayer)]
    if not layers:
        raise ValueError("no nn.TransformerEncoderLayer")
    first = layers[0]
    D = first.self_attn.embed_dim
    embs = [m for _, m in _modules(module, nn.Embedding) if m.embedding_dim == D]
    tok = _one([m for m in embs if m.num_embeddings == n_words],
               "nn.Embedding(%d, %d) of the tokens" % (n_words, D))
    pos_embs = [m for m in embs if m is not tok]
    free = [p for name, p in module.named_parameters(recurse=True)
            if "." not in name and p.dim() in (2, 3) and p.shape[-1] == D
            and (p.dim() == 2 or p.shape[0] == 1)]
    pos = _one([m.weight for m in pos_embs] + free,
               "position table (an nn.Parameter [P, %d] or nn.Embedding(P, %d))" % (D, D))
    pos = pos.reshape(-1, D)
    norm_first = first.norm_first
    config = {"arch": "transformer", "vocab_size": n_words, "embed_dim": D,
              "n_heads": first.self_attn.num_heads, "ffn_dim": first.linear1.out_features,
              "n_layers": len(layers), "max_len": pos.shape[0],
              "norm": "pre" if norm_first else "post", "activation": _activation(first)}
    in_layers = {id(m) for layer in layers for m in layer.modules()}
    tensors = [("pos_embedding", pos), ("embedding.weight", tok.weight)]
    for i, layer in enumerate(layers):
        same = (layer.norm_first == norm_first and _activation(layer) == config["activation"]
                and layer.self_attn.num_heads == config["n_heads"]
                and layer.linear1.out_features == config["ffn_dim"]
                and layer.self_attn.in_proj_bias is not None
                and layer.self_attn._qkv_same_embed_dim)
        if not same:
            raise ValueError("encoder layer %d differs from layer 0 (all must be alike, with "
                             "bias and packed q, k, v)" % i)
        for ln in (layer.norm1, layer.norm2):
            if ln.eps != 1e-5 or not ln.elementwise_affine:
                raise ValueError("encoder layer %d: LayerNorm eps must be 1e-5 (attn's)" % i)
        tensors += [("layers.%d.%s" % (i, k), v) for k, v in layer.named_parameters()]
    finals = [m for _, m in _modules(module, nn.LayerNorm)
              if id(m) not in in_layers and m.normalized_shape == (D,)]
    if norm_first:
        final = _one(finals, "final nn.LayerNorm(%d) (norm_first layers need one)" % D)
        if final.eps != 1e-5:
            raise ValueError("the final LayerNorm's eps must be 1e-5")
        tensors += [("norm.weight", final.weight), ("norm.bias", final.bias)]
    elif finals:
        raise ValueError("post-norm layers (norm_first=False) take no final LayerNorm in attn")
    head = _one([m for _, m in _modules(module, nn.Linear)
                 if id(m) not in in_layers and m.out_features == 1 and m.in_features == D],
                "nn.Linear(%d, 1) head" % D)
    tensors += [("head.weight", head.weight), ("head.bias", head.bias)]
    return config, tensors


def convert(module, words, pad_token="[PAD]", cls_token="[CLS]"):
    """-> (config, [(attn state_dict name, tensor)], vocab) for module and its word list."""
    words = list(words)
    if _modules(module, nn.TransformerEncoderLayer):
        config, tensors = _transformer(module, len(words))
    else:
        config, tensors = _recurrent(module)
    vocab = list(words)
    if vocab and vocab[0] == pad_token:
        vocab[0] = "[PAD]"
    if config["arch"] == "transformer" and len(vocab) > 1 and vocab[1] == cls_token:
        vocab[1] = "[CLS]"
    if vocab and vocab[0] != "[PAD]":
        raise ValueError("token 0 is %r, but attn needs [PAD] at id 0: name your padding token "
                         "with --pad-token (pad_token=)" % (vocab[0],))
    if config["arch"] == "transformer" and len(vocab) > 1 and vocab[1] != "[CLS]":
        raise ValueError("token 1 is %r, but attn's transformer needs [CLS] at id 1: name yours "
                         "with --cls-token (cls_token=)" % (vocab[1],))
    weights_json.check_vocab(vocab, config)
    return config, [(k, v.detach()) for k, v in tensors], vocab


def export(module, words, path, pad_token="[PAD]", cls_token="[CLS]", encoding="text"):
    """Writes module with its vocabulary to path (attn-weights-v1); returns the config."""
    config, tensors, vocab = convert(module, words, pad_token, cls_token)
    weights_json.export_tensors(tensors, config, path, encoding, vocab)
    return config


def _build(spec, kwargs):
    path, _, name = spec.partition(":")
    if not name:
        raise ValueError("--module expects FILE.py:NAME, got %r" % (spec,))
    loader = importlib.util.spec_from_file_location("user_model", path)
    mod = importlib.util.module_from_spec(loader)
    loader.loader.exec_module(mod)
    return getattr(mod, name)(**kwargs)


def main():
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog="Exit codes: 0 written, 1 the model or vocabulary does not fit attn (said why), "
               "2 usage error.")
    ap.add_argument("--module", required=True, help="FILE.py:NAME, a class or function "
                    "returning the nn.Module")
    ap.add_argument("--kwargs", default="{}", help="JSON object of arguments for NAME")
    ap.add_argument("--state-dict", help="torch.save'd state_dict, loaded with strict=True")
    ap.add_argument("--vocab", required=True, help="one token a line; line i is id i")
    ap.add_argument("--out", required=True, help="the attn-weights-v1 JSON to write")
    ap.add_argument("--pad-token", default="[PAD]", help="your token at id 0 (written as [PAD])")
    ap.add_argument("--cls-token", default="[CLS]",
                    help="your token at id 1 (transformer; written as [CLS])")
    ap.add_argument("--encoding", default="text", choices=weights_json.ENCODINGS)
    args = ap.parse_args()
    try:
        module = _build(args.module, json.loads(args.kwargs))
        if args.state_dict:
            module.load_state_dict(torch.load(args.state_dict, map_location="cpu"), strict=True)
        with open(args.vocab, encoding="utf-8") as f:
            words = [line.rstrip("\r\n") for line in f]
        config = export(module.eval(), words, args.out, args.pad_token, args.cls_token,
                        args.encoding)
    except (ValueError, OSError, RuntimeError, AttributeError, ImportError) as e:
        print("export_classifier.py: %s" % (e,), file=sys.stderr)
        return 1
    print("%s: wrote %s (%s) with its %d-token vocabulary"
          % (args.out, config["arch"], ", ".join("%s %s" % (k, v) for k, v in config.items()
                                                 if k != "arch"), len(words)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
