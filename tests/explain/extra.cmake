# tests/explain/extra.cmake -- the live PyTorch check of `attn explain`: attention probabilities
# bit-identical to self_attn(need_weights=True, average_attn_weights=False) per layer, prefix
# probabilities identical to `attn predict` of each prefix, saliency within 1e-5 of autograd, on
# random and trained weights. Needs /usr/bin/python3 with torch. Label "torch".
add_test(NAME explain/explain_torch
         COMMAND /usr/bin/python3 ${CMAKE_SOURCE_DIR}/tools/explain_torch.py --attn $<TARGET_FILE:attn>)
set_tests_properties(explain/explain_torch PROPERTIES
  ENVIRONMENT "OPENBLAS_NUM_THREADS=1"
  LABELS torch
  TIMEOUT 300)

# `attn explain` on seq2seq weights against PyTorch (tools/seq2seq_explain_torch.py): the
# default and 6 random nn.Transformer configurations and a trained model, with and without a
# forced prefix: outputs as PyTorch's greedy loop, top-5 probabilities bit-identical to
# torch.softmax of the same logits, every cross- and self-attention probability bit-identical
# to need_weights=True, average_attn_weights=False inside the model's own forward, saliency
# within 1e-5 of float64 autograd (or twice PyTorch's float32 error). Label "torch".
add_test(NAME explain/seq2seq_explain_torch
         COMMAND /usr/bin/python3 ${CMAKE_SOURCE_DIR}/tools/seq2seq_explain_torch.py --attn $<TARGET_FILE:attn>)
set_tests_properties(explain/seq2seq_explain_torch PROPERTIES
  ENVIRONMENT "OPENBLAS_NUM_THREADS=1"
  LABELS torch
  TIMEOUT 600)

# `attn explain --qk` against PyTorch (tools/explain_qk_torch.py): every layer's and head's q
# (scaled), k and scores bit-identical to the tensors of self_attn's own q.k^T product, and
# torch.softmax of the scores identical to the attention, on random and the trained
# Transformer; with --pos alibi also q.k and the ALiBi term, whose sum the scores are. Label
# "torch".
add_test(NAME explain/explain_qk_torch
         COMMAND /usr/bin/python3 ${CMAKE_SOURCE_DIR}/tools/explain_qk_torch.py --attn $<TARGET_FILE:attn>)
set_tests_properties(explain/explain_qk_torch PROPERTIES
  ENVIRONMENT "OPENBLAS_NUM_THREADS=1"
  LABELS torch
  TIMEOUT 300)
