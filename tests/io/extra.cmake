# tests/io/extra.cmake -- the live PyTorch cross-check: fresh PyTorch weights -> JSON ->
# `attn predict` -> every logit bit-identical to PyTorch's batch-1 eval logit. Needs
# /usr/bin/python3 with torch (Debian python3-torch, installed by the README). Label "torch".
add_test(NAME io/crosscheck_torch
         COMMAND /usr/bin/python3 ${CMAKE_SOURCE_DIR}/tools/crosscheck.py --attn $<TARGET_FILE:attn>)
set_tests_properties(io/crosscheck_torch PROPERTIES
  ENVIRONMENT "OPENBLAS_NUM_THREADS=1"
  LABELS torch
  TIMEOUT 300)

# Random configurations (tools/crosscheck.py --random): 30 models -- Transformers of any width,
# head count, FFN width, 1-4 layers, max_len up to 256, pre/post, relu/gelu, learned/sinusoidal/
# no positions; RNN/LSTM/GRU of 1-3 layers and sizes 4-64 -- each on a sentence of every length
# (the recurrent models after the first three on every 4th length), every logit bit-identical
# to PyTorch's batch-1 eval logit. About 70 s on a 2-core machine.
add_test(NAME io/crosscheck_random_torch
         COMMAND /usr/bin/python3 ${CMAKE_SOURCE_DIR}/tools/crosscheck.py --attn $<TARGET_FILE:attn>
                 --random 30 --seed 1 --stride 4)
set_tests_properties(io/crosscheck_random_torch PROPERTIES
  ENVIRONMENT "OPENBLAS_NUM_THREADS=1"
  LABELS torch
  TIMEOUT 300)

# Training round trip of non-default configurations (tools/crosscheck.py --roundtrip): PyTorch
# weights -> `attn train --init` (configuration from the file, a few Adam steps, --warmup in
# some) -> PyTorch load_state_dict(strict=True) -> PyTorch's logits equal attn's bit for bit.
add_test(NAME io/train_roundtrip_torch
         COMMAND /usr/bin/python3 ${CMAKE_SOURCE_DIR}/tools/crosscheck.py --attn $<TARGET_FILE:attn>
                 --roundtrip)
set_tests_properties(io/train_roundtrip_torch PROPERTIES
  ENVIRONMENT "OPENBLAS_NUM_THREADS=1"
  LABELS torch
  TIMEOUT 300)

# A user's own PyTorch classifiers (rnn, lstm, gru, transformer) with a vocabulary of their own
# (200 random words): exported with tools/export_classifier.py, `attn predict` on the words and
# `attn predict --ids` on the ids both bit-identical to PyTorch. Label "torch".
add_test(NAME io/vocab_torch
         COMMAND /usr/bin/python3 ${CMAKE_SOURCE_DIR}/tools/vocab_crosscheck.py --attn $<TARGET_FILE:attn>)
set_tests_properties(io/vocab_torch PROPERTIES
  ENVIRONMENT "OPENBLAS_NUM_THREADS=1"
  LABELS torch
  TIMEOUT 300)

# The same check with OPENBLAS_CORETYPE=SkylakeX in the environment: attn (pinned kernels,
# src/kernels/kernelset.c) and tools/blas_core.py must both run OpenBLAS's Haswell kernels
# anyway, so every logit stays bit-identical (SkylakeX's kernels round otherwise).
add_test(NAME io/crosscheck_torch_coretype
         COMMAND /usr/bin/python3 ${CMAKE_SOURCE_DIR}/tools/crosscheck.py --attn $<TARGET_FILE:attn>)
set_tests_properties(io/crosscheck_torch_coretype PROPERTIES
  ENVIRONMENT "OPENBLAS_NUM_THREADS=1;OPENBLAS_CORETYPE=SkylakeX"
  LABELS torch
  TIMEOUT 300)

# The other direction (docs/numerics.md, "Which kernels a command runs on"): attn's default
# against stock PyTorch, no variable set on either side (ATTN_KERNELS=default is read by
# tools/blas_core.py only, which then removes it: each attn command runs its own default, native
# for predict and train, and PyTorch OpenBLAS's own choice): every logit bit-identical wherever
# OpenBLAS picks the same kernels for both, i.e. on every machine.
add_test(NAME io/crosscheck_torch_default
         COMMAND /usr/bin/python3 ${CMAKE_SOURCE_DIR}/tools/crosscheck.py --attn $<TARGET_FILE:attn>)
set_tests_properties(io/crosscheck_torch_default PROPERTIES
  ENVIRONMENT "ATTN_KERNELS=default"
  LABELS torch
  TIMEOUT 300)

# safetensors against an independent reader and writer (tools/safetensors_crosscheck.py): the
# files `attn convert` writes parsed with struct/json/numpy, every tensor bit-identical to the
# JSON weights; files written from a PyTorch state_dict give attn predict/generate the JSON's
# bytes and convert back to the JSON's bytes (a Transformer, an LSTM, a seq2seq Transformer).
add_test(NAME io/safetensors_torch
         COMMAND /usr/bin/python3 ${CMAKE_SOURCE_DIR}/tools/safetensors_crosscheck.py --attn $<TARGET_FILE:attn>)
set_tests_properties(io/safetensors_torch PROPERTIES
  ENVIRONMENT "OPENBLAS_NUM_THREADS=1"
  LABELS torch
  TIMEOUT 300)
