# tests/models/extra.cmake -- the model tests again with OPENBLAS_NUM_THREADS=2: batch-1 golden
# logits must stay bit-identical (every batch-1 GEMM is below OpenBLAS's threading threshold)
# and batched gradients within their tolerances when large GEMMs are split across threads. The
# pinned kernels run OpenBLAS on one thread, so these run the native kernels (ATTN_KERNELS=native):
# OpenBLAS's own table on two threads, against the goldens within the cross-core tolerance where
# its table is not the goldens'. OMP_WAIT_POLICY=passive: OpenBLAS's OpenMP build (the one linked
# when installed) would keep its second thread spinning after every product, CPU the tests beside
# this one in the parallel stages need (the LSTM's: 2.9 s of CPU for 2.3 s, 1.8 s passive).
foreach(model rnn lstm transformer)
  add_test(NAME models/test_${model}_threads2 COMMAND test_${model})
  set_tests_properties(models/test_${model}_threads2 PROPERTIES
    ENVIRONMENT "CK_DEFAULT_TIMEOUT=300;ATTN_SOURCE_DIR=${CMAKE_SOURCE_DIR};OPENBLAS_NUM_THREADS=2;ATTN_KERNELS=native;OMP_WAIT_POLICY=passive"
    TIMEOUT 600)
endforeach()

# The model tests again on the scalar kernels (ATTN_CPU=scalar, src/kernels/cpu.c): golden
# logits and gradients within their cross-machine tolerances (tu_golden_exact never requires
# bit-identity there: the scalar kernels do not reproduce PyTorch's AVX2 arithmetic).
foreach(model rnn lstm transformer)
  add_test(NAME models/test_${model}_scalar COMMAND test_${model})
  set_tests_properties(models/test_${model}_scalar PROPERTIES
    ENVIRONMENT "CK_DEFAULT_TIMEOUT=300;ATTN_SOURCE_DIR=${CMAKE_SOURCE_DIR};OPENBLAS_NUM_THREADS=1;ATTN_CPU=scalar"
    TIMEOUT 600)
endforeach()

# The seq2seq-transformer against nn.Transformer (tools/seq2seq_crosscheck.py; rope and alibi
# against tools/seq2seq_pos.py's layers): the default, the default with rope and with alibi,
# random configurations of every position scheme, teacher-forced logits of pairs of every source length (stride 3) and every
# decoder length bit-identical to PyTorch's batch-1 eval forward, the float -inf and bool causal
# masks identical in PyTorch, greedy --no-cache decoding identical to a PyTorch loop (tokens and
# per-step logits). About 25 s. Label "torch".
add_test(NAME models/seq2seq_torch
         COMMAND /usr/bin/python3 ${CMAKE_SOURCE_DIR}/tools/seq2seq_crosscheck.py
                 --attn $<TARGET_FILE:attn> --random 12 --seed 1 --stride 3)
set_tests_properties(models/seq2seq_torch PROPERTIES
  ENVIRONMENT "OPENBLAS_NUM_THREADS=1"
  LABELS torch
  TIMEOUT 600)

# seq2seq gradients (attn grad on seq2seq weights) against PyTorch's autograd: every tensor
# within 1e-4 of its largest gradient (tools/seq2seq_grad_check.py prints the ULP table of
# docs/decoder.md). Label "torch".
add_test(NAME models/seq2seq_grad_torch
         COMMAND /usr/bin/python3 ${CMAKE_SOURCE_DIR}/tools/seq2seq_grad_check.py
                 --attn $<TARGET_FILE:attn>)
set_tests_properties(models/seq2seq_grad_torch PROPERTIES
  ENVIRONMENT "OPENBLAS_NUM_THREADS=1"
  LABELS torch
  TIMEOUT 300)

# The same on the plain kernels of both sides: attn's scalar path (ATTN_CPU=scalar) against
# PyTorch with ATEN_CPU_CAPABILITY=default (tools/seq2seq_crosscheck.py --scalar). Label "torch".
add_test(NAME models/seq2seq_scalar_torch
         COMMAND /usr/bin/python3 ${CMAKE_SOURCE_DIR}/tools/seq2seq_crosscheck.py
                 --attn $<TARGET_FILE:attn> --random 6 --seed 2 --stride 4 --scalar)
set_tests_properties(models/seq2seq_scalar_torch PROPERTIES
  ENVIRONMENT "OPENBLAS_NUM_THREADS=1"
  LABELS torch
  TIMEOUT 600)

# seq2seq-gru and seq2seq-attn against their hand-written PyTorch modules (nn.GRU, nn.GRUCell,
# nn.Linear; tools/seq2seq_crosscheck.py --models rnn): the default configuration of each and
# random ones, teacher-forced logits of every source length (stride 3) and decoder length,
# greedy (--no-cache and cached), beam and sampling identical, max 0 ULP. Label "torch".
add_test(NAME models/seq2seq_rnn_torch
         COMMAND /usr/bin/python3 ${CMAKE_SOURCE_DIR}/tools/seq2seq_crosscheck.py
                 --attn $<TARGET_FILE:attn> --models rnn --random 10 --seed 1 --stride 3)
set_tests_properties(models/seq2seq_rnn_torch PROPERTIES
  ENVIRONMENT "OPENBLAS_NUM_THREADS=1"
  LABELS torch
  TIMEOUT 600)

# The same on the plain kernels of both sides (ATTN_CPU=scalar, ATEN_CPU_CAPABILITY=default).
add_test(NAME models/seq2seq_rnn_scalar_torch
         COMMAND /usr/bin/python3 ${CMAKE_SOURCE_DIR}/tools/seq2seq_crosscheck.py
                 --attn $<TARGET_FILE:attn> --models rnn --random 4 --seed 2 --stride 4 --scalar)
set_tests_properties(models/seq2seq_rnn_scalar_torch PROPERTIES
  ENVIRONMENT "OPENBLAS_NUM_THREADS=1"
  LABELS torch
  TIMEOUT 600)

# seq2seq-gru and seq2seq-attn gradients (attn grad, pairs packed in one batch) against
# autograd: every tensor within 1e-4 of its largest gradient. Label "torch".
add_test(NAME models/seq2seq_rnn_grad_torch
         COMMAND /usr/bin/python3 ${CMAKE_SOURCE_DIR}/tools/seq2seq_grad_check.py
                 --attn $<TARGET_FILE:attn> --models rnn)
set_tests_properties(models/seq2seq_rnn_grad_torch PROPERTIES
  ENVIRONMENT "OPENBLAS_NUM_THREADS=1"
  LABELS torch
  TIMEOUT 300)

# The seq2seq cross-checks in the other direction: attn's default (native for generate and train)
# against stock PyTorch with no variable set on either side (ATTN_KERNELS=default is read and
# removed by tools/blas_core.py): teacher-forced logits, greedy decoding and beams of the
# seq2seq-transformer, and of seq2seq-gru and seq2seq-attn, bit-identical. Label "torch".
add_test(NAME models/seq2seq_torch_default
         COMMAND /usr/bin/python3 ${CMAKE_SOURCE_DIR}/tools/seq2seq_crosscheck.py
                 --attn $<TARGET_FILE:attn> --random 12 --seed 1 --stride 3)
add_test(NAME models/seq2seq_rnn_torch_default
         COMMAND /usr/bin/python3 ${CMAKE_SOURCE_DIR}/tools/seq2seq_crosscheck.py
                 --attn $<TARGET_FILE:attn> --models rnn --random 10 --seed 1 --stride 3)
set_tests_properties(models/seq2seq_torch_default models/seq2seq_rnn_torch_default PROPERTIES
  ENVIRONMENT "ATTN_KERNELS=default"
  LABELS torch
  TIMEOUT 600)

# The write-up's own sizes against PyTorch (tools/base_crosscheck.py): section 6's base
# nn.Transformer (d_model 512, 8 heads, FFN 2048, 6+6 layers; post-norm as in the write-up and
# pre-norm), fresh perturbed weights as safetensors, teacher-forced logits of 3 short pairs and
# greedy --no-cache tokens and logits of 2 short sources bit-identical to PyTorch (KV cache in
# ULPs, reported), and a ViT-Base-size encoder (d 768, 12 heads, MLP 3072, 12 layers, pre-norm
# GELU) on 3 short sentences. Pinned: attn pinned against PyTorch on OpenBLAS's Haswell kernels;
# native: attn --kernels native against PyTorch with nothing set (OpenBLAS's own kernels and
# threads on both sides). About 5-15 s each. The full lengths (max_src_len 80, 15 target words,
# 80-word sentences, more pairs) run under the label "slow": about 90 s.
add_test(NAME models/base_torch
         COMMAND /usr/bin/python3 ${CMAKE_SOURCE_DIR}/tools/base_crosscheck.py
                 --attn $<TARGET_FILE:attn>)
set_tests_properties(models/base_torch PROPERTIES
  ENVIRONMENT "ATTN_KERNELS=pinned" LABELS torch TIMEOUT 300)
add_test(NAME models/base_torch_native
         COMMAND /usr/bin/python3 ${CMAKE_SOURCE_DIR}/tools/base_crosscheck.py
                 --attn $<TARGET_FILE:attn>)
set_tests_properties(models/base_torch_native PROPERTIES
  ENVIRONMENT "ATTN_KERNELS=native" LABELS torch TIMEOUT 300)
add_test(NAME models/base_torch_full
         COMMAND /usr/bin/python3 ${CMAKE_SOURCE_DIR}/tools/base_crosscheck.py
                 --attn $<TARGET_FILE:attn> --full --pairs 6 --sources 4 --sentences 6)
set_tests_properties(models/base_torch_full PROPERTIES
  ENVIRONMENT "ATTN_KERNELS=pinned" LABELS slow TIMEOUT 900)
add_test(NAME models/base_torch_full_native
         COMMAND /usr/bin/python3 ${CMAKE_SOURCE_DIR}/tools/base_crosscheck.py
                 --attn $<TARGET_FILE:attn> --full --pairs 6 --sources 4 --sentences 6)
set_tests_properties(models/base_torch_full_native PROPERTIES
  ENVIRONMENT "ATTN_KERNELS=native" LABELS slow TIMEOUT 900)

# A fixed decode length and batched greedy decoding at the base width (tools/greedy_len_check.py):
# d_model 512, 8 heads, FFN 2048, 2 + 2 layers (CI-fast), post-norm, perturbed weights with the
# head's [EOS] bias raised so that greedy decoding stops at once (the premise, checked); then
# `attn generate --min-len 10` recomputing and cached against seq2seq_models.greedy /
# greedy_cached (min_out 10): tokens and every step's logits bit for bit, every output >= 10
# words; `--batch 8 --min-len 10` against seq2seq_models.greedy_batch (the batched cached loop);
# bad --min-len / --batch values exit 2 naming the option. Pinned and native, as models/base_torch.
add_test(NAME models/greedy_len_torch
         COMMAND /usr/bin/python3 ${CMAKE_SOURCE_DIR}/tools/greedy_len_check.py
                 --attn $<TARGET_FILE:attn>)
set_tests_properties(models/greedy_len_torch PROPERTIES
  ENVIRONMENT "ATTN_KERNELS=pinned" LABELS torch TIMEOUT 300)
add_test(NAME models/greedy_len_torch_native
         COMMAND /usr/bin/python3 ${CMAKE_SOURCE_DIR}/tools/greedy_len_check.py
                 --attn $<TARGET_FILE:attn>)
set_tests_properties(models/greedy_len_torch_native PROPERTIES
  ENVIRONMENT "ATTN_KERNELS=native" LABELS torch TIMEOUT 300)
# The same at the full base size (6 + 6 layers), 16 sources decoded to 15 words: label "slow"
# (about 60 s on the shared machine).
add_test(NAME models/greedy_len_torch_base
         COMMAND /usr/bin/python3 ${CMAKE_SOURCE_DIR}/tools/greedy_len_check.py
                 --attn $<TARGET_FILE:attn> --layers 6 --min-len 15 --sources 16)
set_tests_properties(models/greedy_len_torch_base PROPERTIES
  ENVIRONMENT "ATTN_KERNELS=pinned" LABELS slow TIMEOUT 900)
