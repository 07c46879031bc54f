# tests/kernels/extra.cmake -- every kernel path against live PyTorch run with the matching ATen
# CPU capability (tools/portable_check.py): ATTN_CPU=scalar vs ATEN_CPU_CAPABILITY=default,
# ATTN_CPU=avx2 vs ATEN_CPU_CAPABILITY=avx2 and, on a CPU with AVX-512, ATTN_CPU=avx512 vs
# ATEN_CPU_CAPABILITY=avx512; 10 models x every length 1..80 words, every logit
# bit-identical (about 30 s on an idle 2-core machine). Needs /usr/bin/python3 with torch
# (Debian python3-torch). Label "torch".
add_test(NAME kernels/portable_torch
         COMMAND /usr/bin/python3 ${CMAKE_SOURCE_DIR}/tools/portable_check.py
                 --attn $<TARGET_FILE:attn>)
set_tests_properties(kernels/portable_torch PROPERTIES
  ENVIRONMENT "OPENBLAS_NUM_THREADS=1"
  LABELS torch
  TIMEOUT 300)

# Pinned kernels (tests/kernels/kernels_pinned.sh): a short `attn train` of the Transformer and
# the LSTM is byte-identical with OPENBLAS_CORETYPE unset, Haswell, Zen (and SkylakeX,
# Cooperlake on an AVX-512 CPU), OPENBLAS_L2_SIZE changed and OPENBLAS_NUM_THREADS=2; native
# Prescott kernels differ (the check can fail). A few seconds (30 s under the sanitizers: label
# "slow", so the sanitizer stage leaves it to the release stage); skipped without AVX2+FMA.
add_test(NAME kernels/pinned
         COMMAND bash ${CMAKE_SOURCE_DIR}/tests/kernels/kernels_pinned.sh $<TARGET_FILE:attn>)
set_tests_properties(kernels/pinned PROPERTIES SKIP_RETURN_CODE 77 LABELS slow TIMEOUT 300)

# The kernel tests of tests/kernels/kernel_paths.h once per CPU path, the path named in
# ATTN_TEST_PATH: kernels/test_<op> the scalar kernels, kernels/test_<op>_avx2 and _avx512 the
# vectorised ones, reported as skipped (exit 77) where the CPU or the build lacks them.
foreach(t test_activations test_adam_update test_embedding test_gelu_backward test_layernorm test_loss
          test_softmax test_recurrent_cells)
  get_test_property(kernels/${t} ENVIRONMENT env)
  set_tests_properties(kernels/${t} PROPERTIES ENVIRONMENT "${env};ATTN_TEST_PATH=scalar")
  foreach(path avx2 avx512)
    add_test(NAME kernels/${t}_${path} COMMAND ${t})
    set_tests_properties(kernels/${t}_${path} PROPERTIES
      ENVIRONMENT "${env};ATTN_TEST_PATH=${path}" SKIP_RETURN_CODE 77 TIMEOUT 600)
  endforeach()
endforeach()

# The write-up's ViT-Base shares (test_flops' case "writeup") run two ViT-Base layers, one of
# 4097 tokens: about 25 s of CPU under the sanitizers for counts no build changes. They run as
# kernels/test_flops_writeup (label "slow": the release stage); kernels/test_flops runs the
# other cases (tag "writeup" excluded) in every stage: the same counter and layers at small
# sizes, the blocked path at 1069 tokens.
get_test_property(kernels/test_flops ENVIRONMENT env)
set_tests_properties(kernels/test_flops PROPERTIES ENVIRONMENT "${env};CK_EXCLUDE_TAGS=writeup")
add_test(NAME kernels/test_flops_writeup COMMAND test_flops)
set_tests_properties(kernels/test_flops_writeup PROPERTIES
  ENVIRONMENT "${env};CK_RUN_CASE=writeup" LABELS slow TIMEOUT 600)

# SLEEF's 16-lane AVX-512F functions against the 8-lane ones (test_sleef_avx512.c): skipped (exit
# 77) on a CPU without AVX-512F.
set_tests_properties(kernels/test_sleef_avx512 PROPERTIES SKIP_RETURN_CODE 77)

# The kernels each command runs on by default (tests/kernels/kernels_policy.sh,
# src/cli/kernels_policy.c): native for predict, train, ..., pinned for reproduce, figures,
# experiment, attend, lesson, sweep; ATTN_KERNELS and --kernels override. A few seconds.
add_test(NAME kernels/policy
         COMMAND bash ${CMAKE_SOURCE_DIR}/tests/kernels/kernels_policy.sh $<TARGET_FILE:attn>)
set_tests_properties(kernels/policy PROPERTIES LABELS slow TIMEOUT 300)
