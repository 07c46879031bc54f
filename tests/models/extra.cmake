# tests/models/extra.cmake -- the model tests again with OPENBLAS_NUM_THREADS=2: batch-1 golden
# logits must stay bit-identical (every batch-1 GEMM is below OpenBLAS's threading threshold)
# and batched gradients within their tolerances when large GEMMs are split across threads. The
# pinned kernels run OpenBLAS on one thread, so these run the native kernels (ATTN_KERNELS=native):
# OpenBLAS's own table on two threads, against the goldens within the cross-core tolerance where
# its table is not the goldens'.
foreach(model rnn lstm transformer)
  add_test(NAME models/test_${model}_threads2 COMMAND test_${model})
  set_tests_properties(models/test_${model}_threads2 PROPERTIES
    ENVIRONMENT "CK_DEFAULT_TIMEOUT=300;ATTN_SOURCE_DIR=${CMAKE_SOURCE_DIR};OPENBLAS_NUM_THREADS=2;ATTN_KERNELS=native"
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
