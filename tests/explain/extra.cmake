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
